DELETE FROM state_transitions WHERE machine = 'ticket' AND from_state = 'PROPOSED' AND to_state = 'EXPIRED';
