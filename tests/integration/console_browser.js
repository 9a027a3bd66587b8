// console_browser.js: the browser half of tests/integration/console_browser.sh
// (read its header). Drives Debian's Chromium through puppeteer-core at
// 1280x720; writes STEPS/<name> when the page has seen a stage and waits for
// the files the script writes when the system moved on. Exit 0 = every check
// held and the page logged no error, threw nothing and broke no CSP rule.
'use strict';

const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const env = (n) => {
  if (!process.env[n]) throw new Error(`${n} is not set (console_browser.sh sets it)`);
  return process.env[n];
};
const URL_ = env('CONSOLE_URL');
const TOKEN = env('OPERATOR_TOKEN');
const STEPS = env('STEPS');
const OUT = env('OUT_DIR');
const VICTIM = env('VICTIM');
const VICTIM_TOKEN = env('VICTIM_TOKEN');

const problems = []; // console errors, page errors, CSP violations
let refusalsExpected = false; // the wrong-token stage: the browser logs the 401 it was answered
const t0 = Date.now();
const log = (m) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${m}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const step = (name) => { fs.writeFileSync(path.join(STEPS, name), ''); log(`step ${name}`); };

async function waitFile(name, seconds) {
  const f = path.join(STEPS, name);
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(100))
    if (fs.existsSync(f)) return fs.readFileSync(f, 'utf8');
  throw new Error(`the system did not reach ${name} within ${seconds} s`);
}

// until(what, seconds, fn): polls fn (in node) until it returns a truthy value.
async function until(what, seconds, fn) {
  let last;
  for (const end = Date.now() + seconds * 1000; Date.now() < end; await sleep(200)) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
  }
  throw new Error(`${what}: not within ${seconds} s (last: ${last})`);
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent).catch(() => null);
const shot = async (page, name) => { await page.screenshot({ path: path.join(OUT, `${name}.png`) }); log(`screenshot ${name}.png`); };

function watch(page) {
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (refusalsExpected && /status of 401/.test(m.text())) return;
    problems.push(`console error: ${m.text()} (${JSON.stringify(m.location())})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
}

async function newPage(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 720 });
  // Reported through the console, so watch() sees it.
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`));
  });
  watch(page);
  return page;
}

async function signIn(page, token) {
  await page.goto(URL_, { waitUntil: 'networkidle0' });
  await page.waitForSelector('#token', { visible: true });
  // Keyboard only: the field has the focus; Enter submits.
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.id);
  if (focused !== 'token') throw new Error(`the login form does not start focused on the token (focus: ${focused})`);
  await page.keyboard.type(token);
  await page.keyboard.press('Enter');
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: env('CHROMIUM'),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const page = await newPage(browser);

    // ---- sign in; queue depth rises while players queue -------------------------
    await page.goto(URL_, { waitUntil: 'networkidle0' });
    await shot(page, 'login');
    await signIn(page, TOKEN);
    await page.waitForSelector('#queue-depth', { visible: true });
    const first = Number(await text(page, '#queue-depth'));
    if (first !== 0) throw new Error(`queue depth before anyone queued: ${first}`);
    const live = await text(page, '#live');
    if (!/polling every 2 s/.test(live)) throw new Error(`the bar does not say how it updates: "${live}"`);
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('cc-operator-token'), cookie: document.cookie }));
    if (stored.session !== TOKEN || stored.cookie !== '') throw new Error(`token kept as ${JSON.stringify(stored)}`);
    step('signed-in');
    const depth = await until('queue depth 6 on the overview', 40, async () => {
      const d = Number(await text(page, '#queue-depth'));
      return d >= 6 ? d : null;
    });
    log(`queue depth rose 0 -> ${depth}`);
    await until('the eu-west casual row shows the depth', 5, async () => {
      const row = await page.$$eval('tr[data-queue="casual/eu-west"] td', (tds) => tds.map((t) => t.textContent));
      return Number(row[2]) >= 6;
    });
    await shot(page, 'overview');
    step('queue-seen');

    // ---- a completed match and its result ---------------------------------------
    const [matchId, score] = (await waitFile('match-done', 120)).trim().split('\n');
    log(`match ${matchId} completed ${score}`);
    await page.click('a[data-nav="matches"]');
    await page.waitForSelector('#match-q', { visible: true });
    await page.focus('#match-q');
    await page.keyboard.type(matchId.slice(0, 8));
    await page.keyboard.press('Enter');
    await page.waitForSelector(`a[data-match="${matchId}"]`, { visible: true });
    await shot(page, 'matches');
    await page.click(`a[data-match="${matchId}"]`);
    await until('the match page shows its result', 10, async () => (await text(page, '#match-result')) === `Result: ${score}`);
    if ((await text(page, '#match-state')) !== 'COMPLETED') throw new Error(`match state ${await text(page, '#match-state')}`);
    const timeline = await page.$$eval('#timeline li', (lis) => lis.map((l) => [l.dataset.step, l.className]));
    for (const s of ['proposal', 'allocation', 'ready', 'connected', 'result'])
      if (!timeline.some(([name, cls]) => name === s && cls !== 'pending')) throw new Error(`timeline step ${s} missing: ${JSON.stringify(timeline)}`);
    const rows = await page.$$eval('#view table tbody tr', (trs) => trs.length);
    if (rows < 6) throw new Error(`the match page lists ${rows} rows, fewer than its 6 players`);
    await shot(page, 'match');

    // ---- ban a player; their next request is refused ------------------------------
    await page.click('a[data-nav="players"]');
    await page.waitForSelector('#player-q', { visible: true });
    await page.keyboard.type(VICTIM);
    await page.keyboard.press('Enter');
    await page.waitForSelector(`a[data-player="${VICTIM}"]`, { visible: true });
    await shot(page, 'players');
    await page.click(`a[data-player="${VICTIM}"]`);
    await page.waitForSelector('#ban-reason', { visible: true });
    await page.focus('#ban-reason');
    await page.keyboard.type('console test: griefing');
    await page.keyboard.press('Enter');
    await until('the page shows the ban', 10, async () => /^Banned until .*: console test: griefing$/.test(await text(page, '#ban-status')));
    const refused = await fetch(new URL('/v1/profile/ranked', URL_), { headers: { Authorization: `Bearer ${VICTIM_TOKEN}` } });
    if (refused.status !== 403) throw new Error(`the banned player's next request answered ${refused.status}, not 403`);
    log('the banned player\'s next request: 403');
    await shot(page, 'player');
    step('banned');

    // ---- servers ------------------------------------------------------------------
    await page.click('a[data-nav="servers"]');
    await page.waitForSelector('#servers tbody tr', { visible: true });
    await shot(page, 'servers');

    // ---- stale marker: updates stop when cc-api cannot be reached -----------------------
    await page.click('a[data-nav="overview"]');
    await page.waitForSelector('#queue-depth', { visible: true });
    await page.setOfflineMode(true);
    refusalsExpected = true;
    await until('the bar says stale once polls fail', 15, async () => (await page.$eval('#live', (e) => e.dataset.stale)) === 'true');
    await page.setOfflineMode(false);
    await until('the bar is live again', 15, async () => (await page.$eval('#live', (e) => e.dataset.stale)) === 'false');
    problems.splice(0, problems.length, ...problems.filter((p) => !/ERR_INTERNET_DISCONNECTED|Failed to fetch/.test(p)));
    refusalsExpected = false;

    // ---- a wrong token sees the login form and nothing else ---------------------------
    const ctx = await browser.createBrowserContext();
    const other = await ctx.newPage();
    await other.setViewport({ width: 1280, height: 720 });
    await other.evaluateOnNewDocument(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective}`));
      // Whether the app was ever shown, even for a moment, before the token was refused.
      document.addEventListener('DOMContentLoaded', () => {
        const app = document.getElementById('app');
        new MutationObserver(() => { if (!app.hidden) window.appShown = true; }).observe(app, { attributes: true });
      });
    });
    watch(other);
    refusalsExpected = true;
    await signIn(other, 'wrong-token-0123456789');
    await until('the refusal is shown', 10, async () => (await text(other, '#login-error')) === 'That token was refused.');
    const seen = await other.evaluate(() => ({
      app: document.getElementById('app').hidden,
      login: !document.getElementById('login').hidden,
      view: document.getElementById('view').childElementCount,
      stored: sessionStorage.getItem('cc-operator-token'),
      shown: window.appShown === true,
      text: document.body.innerText,
    }));
    if (!seen.app || seen.shown || !seen.login || seen.view !== 0 || seen.stored !== null || /Players queued|Matches by state/.test(seen.text))
      throw new Error(`a wrong token saw more than the login form: ${JSON.stringify(seen)}`);
    await shot(other, 'wrong-token');
    refusalsExpected = false;
    await ctx.close();
  } finally {
    await browser.close();
  }
  if (problems.length) throw new Error(`the page reported problems:\n  ${problems.join('\n  ')}`);
  log('ok: no console error, page error or CSP violation');
}

main().catch((e) => {
  console.error(`console_browser: FAIL: ${e.message}`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
});
