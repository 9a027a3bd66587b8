DROP INDEX outbox_by_resource;
