-- Rows for the pgbench reference of the heartbeat (scripts/bench.sh): :n
-- players, each with a live session and a QUEUED ticket that does not
-- expire during the run. pgbench_heartbeat_rows maps a row number to the
-- session's token hash and the ticket, so a pgbench client can pick a row
-- by number (pgbench variables are integers) and reach both by index.
DROP TABLE IF EXISTS pgbench_heartbeat_rows;
CREATE TABLE pgbench_heartbeat_rows (
    idx        integer PRIMARY KEY,
    token_hash bytea NOT NULL,
    ticket_id  uuid NOT NULL
);

WITH p AS (
    INSERT INTO players (steam_id)
    SELECT (90000000000000000 + g)::text FROM generate_series(0, :n - 1) g
    RETURNING id, steam_id::bigint - 90000000000000000 AS idx
), s AS (
    INSERT INTO sessions (player_id, token_hash, expires_at)
    SELECT id, sha256(convert_to('pgbench-' || idx, 'UTF8')), now() + interval '1 day' FROM p
    RETURNING player_id, token_hash
), t AS (
    INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation,
                         predicted_rtt, expires_at)
    SELECT id, 'casual', 'QUEUED', 'bench', 1, 1500, 350, '{"bench": 1}', now() + interval '1 hour' FROM p
    RETURNING id, player_id
)
INSERT INTO pgbench_heartbeat_rows (idx, token_hash, ticket_id)
SELECT p.idx, s.token_hash, t.id FROM p JOIN s ON s.player_id = p.id JOIN t ON t.player_id = p.id;

ANALYZE;
