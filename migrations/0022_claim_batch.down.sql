DROP FUNCTION cc_claim_proposals(uuid[], text, uuid[], smallint[], text[], integer[], text[], float8, integer, text,
                                 integer, bigint[]);
