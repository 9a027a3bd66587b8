-- The connection lease of POST /v1/servers/{id}/connect (SPEC 8) names the
-- one connection that claimed it, so the server routes can tell an
-- identical replay of a connect (same connection id: answered with the
-- lease as it is) from a second connection while the first still holds
-- the lease (409 already_connected). NULL until the player's first
-- connect; written only by store/server_routes.c.
ALTER TABLE assignments
    ADD COLUMN connection_id text CHECK (connection_id ~ '^[A-Za-z0-9._:-]{1,64}$');
