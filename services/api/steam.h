/*
 * steam.h - verifies a player's Steam session ticket with Steam's Web API
 * for POST /v1/session/steam (SPEC section 3).
 *
 * One call, steam_authenticate(), turns a hex ticket into a decided outcome:
 * the player's fault (400 malformed, 401 invalid, 403 family-shared or
 * banned), or ours (503: Steam down, slow, answering garbage, refusing our
 * key, or the feature not configured). A Steam outage must never look like
 * a bad ticket, so anything this module does not positively recognise as
 * "Steam judged the ticket" is STEAM_UNAVAILABLE.
 *
 * The request: GET {base_url}/ISteamUserAuth/AuthenticateUserTicket/v1/
 * ?key=<publisher key>&appid=<app id>&ticket=<ticket> (values URL-escaped;
 * a query already in base_url is kept). No redirects, http/https only,
 * one deadline for the whole exchange, the reply body capped at
 * STEAM_MAX_REPLY_BYTES.
 *
 * Steam's answers (partner.steamgames.com/doc/webapi/ISteamUserAuth, and
 * .../doc/webapi_overview/responses for the HTTP statuses):
 *   {"response":{"params":{"result":"OK","steamid":"7656...",
 *     "ownersteamid":"7656...","vacbanned":false,"publisherbanned":false}}}
 *   {"response":{"error":{"errorcode":101,"errordesc":"Invalid ticket"}}}
 * Valve documents the request and the success shape but publishes no list
 * of errorcodes. The table below is what public reports show Steam sending;
 * every code not in it is STEAM_UNAVAILABLE (we cannot tell it is the
 * player's, and a 503 makes an operator look):
 *
 *   errorcode  errordesc              outcome         source
 *   3          "Invalid parameter"    INVALID_TICKET  github.com/Detanup01/gbe_fork issue 250: sent
 *                                                     for ticket bytes that are not a real ticket.
 *                                                     Our own parameters are checked before the
 *                                                     call (app id > 0, key set, ticket hex), so
 *                                                     the ticket is the only one left to blame.
 *   101        "Invalid ticket"       INVALID_TICKET  github.com/Noxime/steamworks-rs issue 142,
 *                                                     github.com/garhow/steam-rs pull 26,
 *                                                     github.com/Ventero/FRESteamWorks issue 36,
 *                                                     forum.heroiclabs.com "Invalid Ticket Error 101"
 *   102        "Ticket for other app" INVALID_TICKET  several public backends compare the whole
 *                                                     reply {"errorcode":102,"errordesc":"Ticket
 *                                                     for other app"} verbatim (a ticket minted
 *                                                     for another App ID)
 *   103        (expired, assumed)     INVALID_TICKET  NOT CONFIRMED by any public source found.
 *                                                     SPEC 3 names "expired" as the player's, and
 *                                                     the Steamworks auth enums list expiry next to
 *                                                     invalid and wrong-game; 103 is our guess for
 *                                                     it. Expired tickets may well arrive as 101.
 *                                                     Every reply's errorcode is logged
 *                                                     (steam_errorcode) to confirm this in production.
 *   anything else                     UNAVAILABLE
 *
 * Other decisions:
 *   - HTTP 200 carries either object. An error object is also accepted on
 *     HTTP 400 (classified by its code). Any other status is UNAVAILABLE:
 *     401/403 mean the key is wrong or revoked (Steam's 403 page says
 *     "Access is denied ... verify your key= parameter"), 429 and 5xx are
 *     Steam's trouble.
 *   - params.result other than "OK" is not documented anywhere; it is
 *     UNAVAILABLE, not a guess at the player's fault.
 *   - Types are strict: errorcode an integer, result a string, steamid and
 *     ownersteamid canonical decimal strings of a non-zero 64-bit number
 *     (1..20 digits, no leading zero), vacbanned and publisherbanned JSON
 *     booleans. Anything else, or both/neither of params and error, is
 *     UNAVAILABLE. Unknown extra members are ignored (Steam may add some).
 *   - Order of the 403s: family sharing (ownersteamid != steamid), then
 *     VAC, then publisher ban (each ban only when its reject_* flag is set).
 *
 * Secrets: the publisher key goes only into the request to Steam. It, the
 * ticket and base_url's query/userinfo never reach a log or a metric. Each
 * call logs one line "steam_authenticate" with outcome, reason, host, path,
 * http_status, duration_ms, steam_errorcode (-1: none) and steamid (when Steam vouched
 * for one, else null); warn level for STEAM_UNAVAILABLE, info otherwise.
 * Metrics: cosmic_clash_steam_requests_total{outcome} counts every call by
 * outcome (malformed and not_configured included, though they send
 * nothing); cosmic_clash_steam_request_duration_seconds times the calls
 * that reached the network.
 *
 * Thread-safe: calls share nothing but libcurl's one-time global init.
 * The module allocates per call and frees before returning.
 */
#ifndef CC_API_STEAM_H
#define CC_API_STEAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define STEAM_TICKET_MIN_LEN 2       /* hex characters */
#define STEAM_TICKET_MAX_LEN 4096    /* hex characters */
#define STEAM_MAX_REPLY_BYTES (64 * 1024)
#define STEAM_DEFAULT_TIMEOUT_MS 5000 /* when timeout_ms <= 0 */
#define STEAM_MAX_TIMEOUT_MS 60000   /* timeout_ms is clamped to this */
#define STEAM_AUTH_PATH "/ISteamUserAuth/AuthenticateUserTicket/v1/"

/* What the caller configures; every pointer stays the caller's. */
struct steam_config {
	const char *base_url;	      /* "https://partner.steam-api.com"; NULL/"" = not configured */
	int64_t app_id;		      /* 1..4294967295; 0 = not configured */
	const char *publisher_key;    /* secret; NULL/"" = not configured */
	int64_t timeout_ms;	      /* whole exchange; <= 0 = STEAM_DEFAULT_TIMEOUT_MS */
	bool reject_vac_banned;	      /* VAC-banned accounts get STEAM_VAC_BANNED */
	bool reject_publisher_banned; /* publisher-banned accounts get STEAM_PUBLISHER_BANNED */
};

/* Who Steam vouched for. */
struct steam_identity {
	char steamid[24];      /* canonical decimal SteamID64 */
	char ownersteamid[24]; /* owner of the license; differs when family-shared */
	bool vacbanned;
	bool publisherbanned;
};

/* X-macro: outcome, name (metric label and wire error code), HTTP status. */
#define STEAM_OUTCOMES(X)                                        \
	X(STEAM_OK, "ok", 200)                                   \
	X(STEAM_MALFORMED_TICKET, "malformed_ticket", 400)       \
	X(STEAM_INVALID_TICKET, "invalid_ticket", 401)           \
	X(STEAM_FAMILY_SHARED, "family_shared", 403)             \
	X(STEAM_VAC_BANNED, "vac_banned", 403)                   \
	X(STEAM_PUBLISHER_BANNED, "publisher_banned", 403)       \
	X(STEAM_UNAVAILABLE, "steam_unavailable", 503)           \
	X(STEAM_NOT_CONFIGURED, "not_configured", 503)

enum steam_outcome {
#define STEAM__ENUM(id, name, status) id,
	STEAM_OUTCOMES(STEAM__ENUM)
#undef STEAM__ENUM
};

/* Why a reply was classified as it was (for logs and tests). */
struct steam_detail {
	const char *reason; /* static text: "ok", "steam_error", "http_status", "timeout", ... */
	int64_t errorcode;  /* Steam's errorcode, -1 when the reply had none */
	long http_status;   /* 0 when no reply arrived */
};

/* The outcome's snake_case name ("invalid_ticket"); "unknown" if out of range. */
const char *steam_outcome_name(enum steam_outcome o);

/* The HTTP status the route answers for the outcome (500 if out of range). */
int steam_outcome_status(enum steam_outcome o);

/* True when base_url, a valid app_id and a publisher key are all set. NULL: false. */
bool steam_configured(const struct steam_config *cfg);

/* True for 2..4096 hex digits (either case), an even count. NULL: false. */
bool steam_ticket_well_formed(const char *ticket);

/*
 * Verifies ticket with Steam. Returns 0 with *outcome set whenever an
 * outcome was decided (every case but out of memory), or CC_ENOMEM with
 * *outcome and *out untouched. Checks, in order: configuration
 * (STEAM_NOT_CONFIGURED), the ticket's form (STEAM_MALFORMED_TICKET); only
 * then is Steam asked. *out is written only when Steam vouched for an
 * identity (STEAM_OK and the three 403 outcomes), so a 403 can still be
 * logged with the account it concerns. Blocks up to the configured timeout
 * plus a little. A NULL cfg, outcome or out is a BUG().
 */
int steam_authenticate(const struct steam_config *cfg, const char *ticket,
		       struct steam_identity *out, enum steam_outcome *outcome) CC_MUST_CHECK;

/*
 * The pure half of steam_authenticate(): classifies one reply from Steam
 * (status and body as received; body need not be NUL-terminated, NULL with
 * len 0 is an empty body) under cfg's reject_* flags. Same return and
 * out-parameter rules as steam_authenticate(); *detail (may be NULL) says
 * why. Exposed so tests can feed it shapes a live server would not send.
 */
int steam_classify_reply(const struct steam_config *cfg, long http_status, const char *body,
			 size_t body_len, struct steam_identity *out, enum steam_outcome *outcome,
			 struct steam_detail *detail) CC_MUST_CHECK;

#endif
