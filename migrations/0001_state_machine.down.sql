DROP FUNCTION cc_enforce_transition();
DROP TABLE state_transitions;
