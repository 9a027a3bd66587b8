DELETE FROM state_transitions WHERE machine IN ('allocation', 'game_server');
DROP TABLE rating_changes;
DROP TABLE match_results;
DROP TABLE assignments;
DROP TABLE rosters;
ALTER TABLE game_servers DROP CONSTRAINT game_servers_allocation_fk;
DROP TABLE allocations;
DROP TABLE game_servers;
