DROP INDEX proposals_recent;
