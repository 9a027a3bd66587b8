DROP FUNCTION cc_claim_proposal(uuid, text, uuid[], smallint[], text, integer, text, float8, integer, text,
                                integer, bigint);
DROP FUNCTION cc_ticket_claimable(tickets, text, text, integer, text, float8);
DROP FUNCTION cc_outbox_append(text, text, uuid, bigint, uuid[], jsonb);
