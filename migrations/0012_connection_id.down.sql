ALTER TABLE assignments DROP COLUMN connection_id;
