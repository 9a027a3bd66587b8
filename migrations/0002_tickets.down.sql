DELETE FROM state_transitions WHERE machine = 'ticket';
DROP TABLE tickets;
DROP TABLE players;
