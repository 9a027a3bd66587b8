-- The state-transition mechanism: legal moves are rows, and a generic trigger
-- refuses every other move, so no code path (or psql session) can put a row
-- into a state the contract (contracts/v1/state-transitions.json) forbids.

CREATE TABLE state_transitions (
    machine    text NOT NULL,  -- "ticket": the machine a table's trigger names
    from_state text NOT NULL,  -- '' = the row is being created (INSERT)
    to_state   text NOT NULL,
    PRIMARY KEY (machine, from_state, to_state)
);

-- Attach as: AFTER INSERT OR UPDATE OF state ON <table> FOR EACH ROW
--            EXECUTE FUNCTION cc_enforce_transition('<machine>')
-- The table's column must be named "state". AFTER, so it sees the final row
-- whatever other BEFORE triggers did. SQLSTATE CC001 is what C maps to
-- CC_ESTATE (libcommon/transitions.h).
CREATE FUNCTION cc_enforce_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_machine text := TG_ARGV[0];
    v_from    text := '';
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.state IS NOT DISTINCT FROM NEW.state THEN
            RETURN NULL;
        END IF;
        v_from := OLD.state;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM state_transitions t
                   WHERE t.machine = v_machine AND t.from_state = v_from
                     AND t.to_state = NEW.state) THEN
        RAISE EXCEPTION 'illegal_transition: % % -> %', v_machine,
            CASE WHEN v_from = '' THEN '(insert)' ELSE v_from END,
            coalesce(NEW.state, '(null)')
            USING ERRCODE = 'CC001',
                  DETAIL = format('table %I, machine %s', TG_TABLE_NAME, v_machine);
    END IF;
    RETURN NULL;
END;
$$;
