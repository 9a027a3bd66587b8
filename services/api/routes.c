/*
 * routes.c - cc-api's route table: the one place that says which handler
 * serves which method and path. The contract test reads this table to find
 * routes that exist on the server but not in contracts/v1/openapi.json.
 */
#include "api.h"
#include "sys/banned.h"

const struct cc_http_route api_routes[] = {
	{ "POST", "/v1/session/steam", api_session_steam },
	{ "POST", "/v1/queue", api_queue_create },
	{ "GET", "/v1/queue/{ticket_id}", api_queue_get },
	{ "POST", "/v1/queue/{ticket_id}/heartbeat", api_queue_heartbeat },
	{ "POST", "/v1/queue/{ticket_id}/cancel", api_queue_cancel },
	{ "POST", "/v1/probes/{region}/challenge", api_probe_challenge },
	{ "POST", "/v1/probes/{region}/answer", api_probe_answer },
	{ "GET", "/v1/proposals/{proposal_id}", api_proposal_get },
	{ "POST", "/v1/proposals/{proposal_id}/response", api_proposal_respond },
	{ "GET", "/v1/profile/ranked", api_profile_ranked },
	{ "POST", "/v1/admin/players/{player_id}/ban", api_operator_ban },
	{ "POST", "/v1/admin/players/{player_id}/unban", api_operator_unban },
	{ "GET", "/v1/admin/players/{player_id}", api_operator_player },
	{ "GET", "/v1/admin/queue/stats", api_operator_queue_stats },
	{ "GET", "/v1/admin/outbox/dead-letters", api_operator_dead_letters },
	{ "POST", "/v1/admin/outbox/dead-letters/{outbox_id}/replay", api_operator_replay },
	{ "GET", "/v1/admin/overview", api_console_overview },
	{ "GET", "/v1/admin/matches", api_console_matches },
	{ "GET", "/v1/admin/matches/{match_id}", api_console_match },
	{ "GET", "/v1/admin/players", api_console_players },
	{ "GET", "/v1/admin/players/{player_id}/history", api_console_player_history },
	{ "GET", "/v1/admin/servers", api_console_servers },
	{ "GET", "/console", api_console_index },
	{ "GET", "/console/{asset}", api_console_asset },
	{ "POST", "/v1/servers/{server_id}/register", api_server_register },
	{ "GET", "/v1/servers/{server_id}/roster", api_server_roster },
	{ "POST", "/v1/servers/{server_id}/connect", api_server_connect },
	{ "POST", "/v1/servers/{server_id}/disconnect", api_server_disconnect },
	{ "POST", "/v1/servers/{server_id}/shutdown", api_server_shutdown },
	{ "POST", "/v1/servers/{server_id}/result", api_server_result },
	{ "POST", "/v1/servers/{server_id}/heartbeat", api_server_heartbeat },
	{ "POST", "/v1/servers/{server_id}/no_show", api_server_no_show },
	{ "POST", "/v1/servers/{server_id}/vacated", api_server_vacated },
	{ "GET", "/v1/backfill-offers/{offer_id}", api_backfill_get },
	{ "POST", "/v1/backfill-offers/{offer_id}/response", api_backfill_respond },
	{ "GET", "/v1/matches/{match_id}/assignment", api_match_assignment },
	{ "GET", "/v1/matches/{match_id}", api_match_get },
	{ "GET", "/v1/events", api_events_get },
	{ "POST", "/v1/parties", api_party_create },
	{ "POST", "/v1/parties/join", api_party_join },
	{ "GET", "/v1/parties/{party_id}", api_party_get },
	{ "POST", "/v1/parties/{party_id}/invite", api_party_invite },
	{ "POST", "/v1/parties/{party_id}/leave", api_party_leave },
	{ "POST", "/v1/parties/{party_id}/kick", api_party_kick },
	{ "POST", "/v1/parties/{party_id}/promote", api_party_promote },
	{ "POST", "/v1/parties/{party_id}/disband", api_party_disband },
	{ "POST", "/v1/parties/{party_id}/queue", api_party_queue },
};
const size_t api_n_routes = CC_ARRAY_LEN(api_routes);
