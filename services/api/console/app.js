// The operator console (services/api/console.c serves it; no build step, no dependencies).
// Data: the /v1/admin routes with the operator token from sessionStorage as a bearer header.
// Live: a short poll of the page's route every POLL_MS; the bar says so, and says "stale"
// when no poll has succeeded for STALE_MS.
import { el, clear, fmtTime, fmtAge, sparkline } from './ui.js';

const TOKEN_KEY = 'cc-operator-token';
const POLL_MS = 2000;
const STALE_MS = 6000;

const $ = (id) => document.getElementById(id);
let lastOk = 0;
let pollTimer = null;
let generation = 0; // bumps on every page change: a late answer for an old page is dropped

class Unauthorized extends Error {}

async function api(path, opts = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw new Unauthorized('no token');
  const headers = { Authorization: `Bearer ${token}`, ...(opts.headers || {}) };
  let body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  const res = await fetch(path, { method: opts.method || 'GET', headers, body, cache: 'no-store' });
  const text = await res.text();
  const json = text ? JSON.parse(text) : null;
  if (res.status === 401) throw new Unauthorized(json && json.error ? json.error.message : 'unauthorized');
  if (!res.ok) {
    const e = new Error(json && json.error ? `${json.error.code}: ${json.error.message}` : `HTTP ${res.status}`);
    e.status = res.status;
    e.code = json && json.error && json.error.code;
    throw e;
  }
  return json;
}

// ---- sign in / out ------------------------------------------------------------

function showLogin(message) {
  stopPolling();
  sessionStorage.removeItem(TOKEN_KEY);
  clear($('view'));
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-error').hidden = !message;
  $('login-error').textContent = message || '';
  $('token').value = '';
  $('token').focus();
}

async function signIn(event) {
  event.preventDefault();
  const token = $('token').value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  try {
    await api('/v1/admin/overview');
  } catch (e) {
    showLogin(e instanceof Unauthorized ? 'That token was refused.' : `Cannot reach cc-api: ${e.message}`);
    return;
  }
  $('login').hidden = true;
  $('app').hidden = false;
  route();
}

// ---- live status -------------------------------------------------------------

function stopPolling() {
  paused = false;
  if (pollTimer) clearTimeout(pollTimer);
  pollTimer = null;
}

let paused = false; // a page read once (the player search): nothing to go stale

function markLive() {
  const live = $('live');
  if (paused) {
    live.classList.remove('stale');
    live.textContent = `read once at ${new Date(lastOk).toLocaleTimeString()} (search again to refresh; other pages poll every ${POLL_MS / 1000} s)`;
    live.dataset.stale = 'false';
    return;
  }
  const age = Date.now() - lastOk;
  const stale = !lastOk || age > STALE_MS;
  live.classList.toggle('stale', stale);
  live.textContent = stale
    ? `stale: no update for ${lastOk ? Math.round(age / 1000) + ' s' : 'ever'} (polling every ${POLL_MS / 1000} s)`
    : `live: polling every ${POLL_MS / 1000} s · updated ${new Date(lastOk).toLocaleTimeString()}`;
  live.dataset.stale = String(stale);
}

// poll(render): render() now and again every POLL_MS while its page is shown.
function poll(render) {
  stopPolling();
  const mine = generation;
  const tick = async () => {
    try {
      await render(mine);
      if (mine !== generation) return;
      lastOk = Date.now();
    } catch (e) {
      if (e instanceof Unauthorized) return showLogin('The operator token was refused; sign in again.');
      if (mine === generation) showProblem(e);
    }
    markLive();
    if (mine === generation) pollTimer = setTimeout(tick, POLL_MS);
  };
  tick();
}

function showProblem(e) {
  let p = $('problem');
  if (!p) {
    p = el('p', { id: 'problem', class: 'error', role: 'alert' });
    $('view').prepend(p);
  }
  p.textContent = e.message;
}

// ---- pages -------------------------------------------------------------------

function table(headers, rows, attrs = {}) {
  return el('table', attrs,
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { class: h.endsWith('#') ? 'num' : '' }, h.replace(/#$/, ''))))),
    el('tbody', {}, ...rows));
}
const num = (v) => el('td', { class: 'num' }, String(v));
const cell = (v) => el('td', {}, v === null || v === undefined ? '–' : v);

function section(title, ...children) {
  return el('section', { class: 'card' }, el('h2', {}, title), ...children);
}

async function overviewPage(mine) {
  const o = await api('/v1/admin/overview');
  if (mine !== generation) return;
  const depth = o.queues.reduce((n, q) => n + q.depth, 0);
  const s = o.series;
  const view = $('view');
  clear(view);
  view.append(
    el('div', { class: 'grid' },
      section('Players queued', el('div', { class: 'stat', id: 'queue-depth' }, String(depth)),
        sparkline(s.queue_depth, 'queue depth, last 15 minutes')),
      section('Matches created', el('div', { class: 'stat' }, String(s.matches_created.reduce((a, b) => a + b, 0))),
        sparkline(s.matches_created, 'matches created per 30 s')),
      section('Allocations (15 min)', el('div', { class: 'stat', id: 'allocations' }, `${o.allocations.requested}`),
        el('div', { class: 'muted' }, `${o.allocations.per_minute} a minute`), sparkline(s.allocations_requested, 'allocations per 30 s')),
      section('Allocation failures (15 min)', el('div', { class: 'stat' }, String(o.allocations.failed)),
        sparkline(s.allocations_failed, 'failed allocations per 30 s', true))),
    section('Queues by playlist and region (current waits)',
      table(['Playlist', 'Region', 'Depth#', 'p50 wait s#', 'p90 wait s#', 'p99 wait s#', 'Oldest s#'],
        o.queues.map((q) => el('tr', { 'data-queue': `${q.playlist}/${q.region}` }, cell(q.playlist), cell(q.region), num(q.depth),
          num(q.wait_p50_seconds), num(q.wait_p90_seconds), num(q.wait_p99_seconds), num(q.oldest_age_seconds))),
        { id: 'queues' })),
    el('div', { class: 'grid2' },
      section('Matches by state (live, and ended in the last 15 minutes)',
        table(['State', 'Matches#'], o.matches_by_state.map((m) => el('tr', {}, cell(m.state), num(m.count))))),
      section('Game servers by state',
        table(['Provider', 'State', 'Servers#'], o.servers_by_state.map((g) => el('tr', {}, cell(g.provider), cell(g.state), num(g.count)))))),
    el('p', { class: 'muted' }, `Generated ${fmtTime(o.generated_at)}; charts are ${s.queue_depth.length} buckets of ${o.series_bucket_seconds} s.`));
}

function matchLink(id) {
  return el('a', { href: `#/match/${id}`, 'data-match': id }, id.slice(0, 8));
}

async function matchesPage(mine, params) {
  const q = params.get('q') || '';
  const view = $('view');
  if (!$('match-q')) {
    clear(view);
    const input = el('input', { id: 'match-q', type: 'search', placeholder: 'match, player, Steam id, server, state…', value: q,
      'aria-label': 'Search matches' });
    const form = el('form', { class: 'toolbar', id: 'match-search' }, input, el('button', { type: 'submit' }, 'Search'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      location.hash = `#/matches?q=${encodeURIComponent(input.value.trim())}`;
    });
    view.append(form, el('div', { id: 'match-list' }));
    input.focus();
  }
  const res = await api(`/v1/admin/matches?limit=50${q ? '&q=' + encodeURIComponent(q) : ''}`);
  if (mine !== generation) return;
  const list = $('match-list');
  clear(list);
  list.append(section(`Matches${q ? ` matching “${q}”` : ''} (newest first)`,
    res.matches.length === 0 ? el('p', { class: 'muted' }, 'No match.') :
      table(['Match', 'Playlist', 'Region', 'Arena', 'State', 'Created', 'Ended', 'Server', 'Score'],
        res.matches.map((m) => el('tr', {}, el('td', {}, matchLink(m.match_id)), cell(m.playlist), cell(m.region), cell(m.arena),
          cell(m.state), cell(fmtTime(m.created_at)), cell(m.ended_at ? `${fmtTime(m.ended_at)} (${m.end_reason})` : null),
          cell(m.server_id), cell(m.score ? `${m.score[0]} – ${m.score[1]}` : null))), { id: 'matches' })));
}

async function matchPage(mine, id) {
  const d = await api(`/v1/admin/matches/${encodeURIComponent(id)}`);
  if (mine !== generation) return;
  const m = d.match;
  const view = $('view');
  clear(view);
  let prev = null;
  const steps = d.timeline.map((t) => {
    const at = t.at ? Date.parse(t.at) : null;
    const delta = at && prev ? `+${((at - prev) / 1000).toFixed(2)} s` : '';
    if (at) prev = at;
    return el('li', { class: at ? '' : 'pending', 'data-step': t.step }, el('span', {}, t.step), el('span', {}, at ? fmtTime(t.at) : 'not yet'),
      el('span', { class: 'muted' }, delta));
  });
  view.append(
    el('p', {}, el('a', { href: '#/matches' }, '← all matches')),
    section(`Match ${m.match_id}`,
      el('p', {}, `${m.playlist} · ${m.region} · ${m.arena} · ${m.team_size}v${m.team_size} · state `, el('strong', { id: 'match-state' }, m.state),
        m.end_reason ? ` (${m.end_reason})` : ''),
      d.result ? el('p', { class: 'result', id: 'match-result' }, `Result: ${d.result.score_team0} – ${d.result.score_team1}`)
        : el('p', { class: 'muted', id: 'match-result' }, 'No result yet.')),
    el('div', { class: 'grid2' },
      section('Timeline', el('ol', { class: 'timeline', id: 'timeline' }, ...steps)),
      section('Server', d.server ? table(['', ''], [
        ['Server', d.server.server_id], ['Provider', d.server.provider], ['Address', d.server.address ? `${d.server.address}:${d.server.port}` : null],
        ['Allocation', d.server.allocation_state], ['Last heartbeat', fmtTime(d.server.last_heartbeat_at)], ['Phase', d.server.last_phase],
        ['Failure', d.server.failure_reason], ['Shutdown', d.server.shutdown_reason]].map(([k, v]) => el('tr', {}, el('th', {}, k), cell(v))))
        : el('p', { class: 'muted' }, 'No allocation.'))),
    section('Players', table(['Team', 'Player', 'Steam id', 'Connected', 'Left', 'Rating before#', 'after#'],
      d.players.map((p) => el('tr', {}, num(p.team), el('td', {}, el('a', { href: `#/player/${p.player_id}` }, p.player_id)), cell(p.steam_id),
        cell(fmtTime(p.connected_at)), cell(p.disconnected_at ? `${fmtTime(p.disconnected_at)} (${p.disconnect_reason})` : null),
        num(p.rating_before === null ? '–' : p.rating_before.toFixed(1)), num(p.rating_after === null ? '–' : p.rating_after.toFixed(1)))))));
}

async function playersPage(mine, params) {
  const q = params.get('q') || '';
  const view = $('view');
  clear(view);
  const input = el('input', { id: 'player-q', type: 'search', placeholder: 'player id, Steam id or name', value: q, 'aria-label': 'Find a player' });
  const form = el('form', { class: 'toolbar', id: 'player-search' }, input, el('button', { type: 'submit' }, 'Find'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    location.hash = `#/players?q=${encodeURIComponent(input.value.trim())}`;
  });
  view.append(form);
  input.focus();
  if (!q) return;
  const res = await api(`/v1/admin/players?q=${encodeURIComponent(q)}`);
  if (mine !== generation) return;
  view.append(section(`Players matching “${q}”`, res.players.length === 0 ? el('p', { class: 'muted' }, 'Nobody.') :
    table(['Player', 'Steam id', 'Name', 'Since', 'Banned until'], res.players.map((p) => el('tr', {},
      el('td', {}, el('a', { href: `#/player/${p.player_id}`, 'data-player': p.player_id }, p.player_id)), cell(p.steam_id),
      cell(p.display_name), cell(fmtTime(p.created_at)), cell(fmtTime(p.banned_until)))), { id: 'players' })));
}

const BAN_DURATIONS = [['1 hour', 3600], ['1 day', 86400], ['7 days', 7 * 86400], ['30 days', 30 * 86400], ['10 years', 3650 * 86400]];

async function playerPage(mine, id, keepForm) {
  const [p, h] = await Promise.all([api(`/v1/admin/players/${encodeURIComponent(id)}`),
    api(`/v1/admin/players/${encodeURIComponent(id)}/history`)]);
  if (mine !== generation) return;
  const view = $('view');
  // A poll must not wipe what the operator is typing into the ban form.
  if (keepForm && view.contains(document.activeElement) && document.activeElement.closest('#ban-form')) return;
  clear(view);
  const banned = p.banned_until && Date.parse(p.banned_until) > Date.now();
  const r = p.rating;
  const reason = el('input', { id: 'ban-reason', maxlength: '256', required: '', placeholder: 'why (the player is told nothing else)', 'aria-label': 'Ban reason' });
  const duration = el('select', { id: 'ban-duration', 'aria-label': 'Ban length' }, ...BAN_DURATIONS.map(([t, s]) => el('option', { value: String(s) }, t)));
  const out = el('p', { id: 'ban-outcome', role: 'status' });
  const banForm = el('form', { class: 'toolbar', id: 'ban-form' }, reason, duration, el('button', { type: 'submit', class: 'danger', id: 'ban' }, 'Ban'));
  banForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const until = new Date(Date.now() + Number(duration.value) * 1000).toISOString();
    await act(out, `/v1/admin/players/${id}/ban`, { until, reason: reason.value.trim(), expected_banned_until: p.banned_until }, id);
  });
  const unban = el('button', { type: 'button', id: 'unban' }, 'Lift the ban');
  unban.addEventListener('click', () => act(out, `/v1/admin/players/${id}/unban`, { expected_banned_until: p.banned_until }, id));
  const facts = table(['', ''], [
    ['Steam id', p.steam_id], ['Since', fmtTime(p.created_at)],
    ['Rating', r ? `${r.rating.toFixed(1)} ± ${r.deviation.toFixed(1)}` : 'unrated'],
    ['Tier', r ? `${r.tier}${r.provisional ? ' (provisional)' : ''}` : null],
    ['Ranked games', r ? String(r.ranked_games) : null], ['Active sessions', String(p.active_sessions)],
    ['Ticket', p.active_ticket ? `${p.active_ticket.state} in ${p.active_ticket.playlist}` : null],
  ].map(([k, v]) => el('tr', {}, el('th', {}, k), cell(v))));
  const status = el('p', { id: 'ban-status', class: banned ? 'banned' : '' },
    banned ? `Banned until ${fmtTime(p.banned_until)}: ${p.ban_reason}` : 'Not banned.');
  const matches = h.matches.length === 0 ? el('p', { class: 'muted' }, 'None.') :
    table(['Match', 'Playlist', 'State', 'Score', 'Rating'], h.matches.map((m) => el('tr', {}, el('td', {}, matchLink(m.match_id)),
      cell(m.playlist), cell(m.state), cell(m.score ? `${m.score[0]} – ${m.score[1]}` : null),
      cell(m.rating_after === null ? null : `${m.rating_before.toFixed(1)} → ${m.rating_after.toFixed(1)}`))));
  const penalties = h.penalties.length === 0 ? el('p', { class: 'muted' }, 'None.') :
    table(['Kind', 'When', 'Cooldown until'], h.penalties.map((n) => el('tr', {}, cell(n.kind), cell(fmtTime(n.created_at)),
      cell(`${fmtTime(n.cooldown_until)}${n.active ? ' (active)' : ''}`))));
  const sessions = h.sessions.length === 0 ? el('p', { class: 'muted' }, 'None.') :
    table(['Session', 'Created', 'Expires', 'Revoked'], h.sessions.map((s) => el('tr', {}, cell(s.session_id.slice(0, 8)),
      cell(fmtTime(s.created_at)), cell(fmtTime(s.expires_at)),
      cell(s.revoked_at ? fmtTime(s.revoked_at) : (s.active ? 'active' : 'expired')))), { id: 'sessions' });
  view.append(
    el('p', {}, el('a', { href: '#/players' }, '← find another player')),
    el('div', { class: 'grid2' }, section(`Player ${p.player_id}`, facts), section('Ban', status, banned ? unban : banForm, out)),
    el('div', { class: 'grid2' }, section('Recent matches', matches), section('Penalties', penalties)),
    section('Sessions', sessions));
}

// act: a fenced operator action (the banned_until this page showed); 409 means someone changed it first.
async function act(out, path, body, id) {
  out.textContent = 'working…';
  try {
    await api(path, { method: 'POST', json: body });
    out.textContent = 'Done.';
    await playerPage(generation, id, false);
    $('ban-outcome').textContent = 'Done.';
  } catch (e) {
    if (e instanceof Unauthorized) return showLogin('The operator token was refused; sign in again.');
    out.textContent = e.status === 409 ? 'Someone changed this player first; the page now shows the current state.' : e.message;
    if (e.status === 409) await playerPage(generation, id, false);
  }
}

async function serversPage(mine) {
  const res = await api('/v1/admin/servers');
  if (mine !== generation) return;
  const view = $('view');
  clear(view);
  view.append(section('Game servers', res.servers.length === 0 ? el('p', { class: 'muted' }, 'No game server has registered.') :
    table(['Server', 'Provider', 'Region', 'Address', 'State', 'Match', 'Match state', 'Up#', 'Last heartbeat', 'Phase'],
      res.servers.map((g) => el('tr', { 'data-server': g.server_id }, cell(g.server_id), cell(g.provider), cell(g.region), cell(`${g.address}:${g.port}`),
        cell(g.state), el('td', {}, g.match_id ? matchLink(g.match_id) : '–'), cell(g.match_state), num(fmtAge(g.uptime_seconds)),
        cell(g.last_heartbeat_at ? `${fmtTime(g.last_heartbeat_at)}` : null), cell(g.last_phase))), { id: 'servers' })));
}

// ---- routing -------------------------------------------------------------------

function route() {
  if (!sessionStorage.getItem(TOKEN_KEY)) return showLogin('');
  generation++;
  const [path, query] = (location.hash.replace(/^#/, '') || '/overview').split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean);
  const page = parts[0] || 'overview';
  const nav = { match: 'matches', player: 'players' }[page] || page;
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('current', a.dataset.nav === nav);
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  clear($('view'));
  document.body.dataset.page = page;
  const pages = {
    overview: (g) => overviewPage(g),
    matches: (g) => matchesPage(g, params),
    match: (g) => matchPage(g, parts[1] || ''),
    players: (g) => playersPage(g, params),
    player: (g) => playerPage(g, parts[1] || '', true),
    servers: (g) => serversPage(g),
  };
  // Pages with a form the operator types into are read once; the others are polled.
  const once = page === 'players';
  const render = pages[page] || ((g) => overviewPage(g));
  if (once) {
    stopPolling();
    paused = true;
    render(generation).then(() => { lastOk = Date.now(); markLive(); }).catch((e) => (e instanceof Unauthorized ? showLogin('The operator token was refused; sign in again.') : showProblem(e)));
  } else poll(render);
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', signIn);
  $('logout').addEventListener('click', () => showLogin(''));
  window.addEventListener('hashchange', route);
  setInterval(markLive, 1000);
  if (sessionStorage.getItem(TOKEN_KEY)) {
    api('/v1/admin/overview').then(() => { $('login').hidden = true; $('app').hidden = false; route(); })
      .catch((e) => showLogin(e instanceof Unauthorized ? '' : e.message));
  } else showLogin('');
});
