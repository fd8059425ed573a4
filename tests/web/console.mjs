// The sale console in a real browser (Debian's chromium, driven by playwright-core):
// a bad or missing token shows an error and changes nothing; sign in; create an event
// through the form; watch it live while seckill-bench sells it; the page's stock left and
// 202 count match the API and /metrics at the end; buy as a user and see queued, then
// created; buy from an event with a proof-of-work challenge (issue 31): the page solves it
// in JavaScript and the order is created; the solver's rate is printed (order/README.md's
// browser figures). Then the operator's side (issue 32): pick events from the list, change
// one, restock it (add and total, a refusal shown), pause and resume it, end it, read its
// admin record page by page, remove it (deleted), and end the sold-out one, reload the page,
// pick it from the ended events' list and archive it; PostgreSQL and the API agree with
// the page.
// Screenshots of the live view, the buyer's challenge and the managed event's record are
// saved in SECKILL_WEB_OUT.
//
// Environment: SECKILL_HTTP, SECKILL_CONSUMER_HTTP, SECKILL_BIN_DIR, SECKILL_JWT_SECRET,
// SECKILL_PG; CHROMIUM (default /usr/bin/chromium); SECKILL_WEB_OUT (default .).
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const base = process.env.SECKILL_HTTP;
const bin = process.env.SECKILL_BIN_DIR;
const consumer = process.env.SECKILL_CONSUMER_HTTP;
const pg = process.env.SECKILL_PG;
const out = process.env.SECKILL_WEB_OUT || '.';
if (!base || !bin || !consumer || !pg) {
  console.error('needs SECKILL_HTTP, SECKILL_CONSUMER_HTTP, SECKILL_BIN_DIR, SECKILL_PG');
  process.exit(2);
}
mkdirSync(out, { recursive: true });

let passed = 0, failed = 0;
const check = (what, ok, detail) => {
  if (ok) { passed++; console.log(`ok   ${what}`); }
  else { failed++; console.log(`FAIL ${what}${detail ? ': ' + detail : ''}`); }
};
const token = (sub, admin) =>
  execFileSync(`${bin}/seckill-order`, ['token', '--sub', String(sub), ...(admin ? ['--admin'] : [])], { encoding: 'utf8' }).trim();
const sql = (q) => execFileSync('psql', [pg, '-tAc', q], { encoding: 'utf8' }).trim();
const events = () => Number(sql('select count(*) from seckill_event'));
const metric202 = async () => {
  const text = await (await fetch(base + '/metrics')).text();
  const m = /^seckill_order_requests_total\{route="order_create",status="202"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
};
const stamp = Date.now() % 1000000000;
const admin = token(stamp * 100 + 1, true);
const user = token(stamp * 100 + 2, false);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1200, height: 1100 } });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('dialog', (d) => d.accept()); // the console's confirm() before end and remove
// Every request the page makes: the tokens must go to its own origin only.
const sent = [];
page.on('request', (r) => sent.push({ url: r.url(), auth: r.headers().authorization }));
const text = (sel) => page.locator(sel).textContent();
const waitText = async (sel, pred, ms = 15000) => {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    last = await text(sel);
    if (pred(last)) return last;
    await page.waitForTimeout(100);
  }
  return last;
};

// The "Manage an event" section (order/console/admin.js), signed in as admin. `soldId`
// is the live view's event: sold out, so it holds orders and can only be archived.
async function manageEvents(soldId) {
  const row = (id) => sql(`select name, stock_total, stock_left, floor(extract(epoch from ends_at))::bigint,
    archived_at is not null from seckill_event where id = ${id}`).split('|');
  const apiEvent = async (id) => (await fetch(`${base}/api/v1/events/${id}`, { headers: { Authorization: 'Bearer ' + admin } })).json();
  const acts = async () => (await page.locator('#audit-rows td.act').allTextContents()).join(' ');
  const result = (pred, ms) => waitText('#manage-result', pred, ms);
  const error = (pred) => waitText('#manage-error', pred);
  // Picking from the list: the earlier events are offered (refresh until the front's list,
  // refreshed every second, has them).
  let offered = [];
  for (let i = 0; i < 30 && !offered.includes(soldId); i++) {
    await page.click('#pick-refresh');
    await page.waitForTimeout(200);
    offered = await page.locator('#pick option').evaluateAll((os) => os.map((o) => o.value));
  }
  check('the list offers the running events to pick', offered.includes(soldId), JSON.stringify(offered));
  await page.selectOption('#pick', soldId);
  check('picking one shows it', (await waitText('#pk-id', (t) => t.includes(soldId))).includes(`console ${stamp}`));
  check('the pick fills the live view\'s event', (await page.inputValue('#watch-id')) === soldId);

  // A new upcoming event, created through the form, is picked at once.
  await page.fill('#ev-name', `manage ${stamp}`);
  await page.fill('#ev-stock', '50');
  await page.fill('#ev-starts', '3600');
  await page.fill('#ev-lasts', '3600');
  await page.click('#create-form button[type=submit]');
  const made = await waitText('#create-result', (t) => t.includes('created event') && !t.endsWith(soldId));
  const id = (/(\d+)$/.exec(made || '') || [])[1];
  check('the created event is picked', (await waitText('#pk-id', (t) => t.includes(String(id)))).includes(`manage ${stamp}`));
  check('it is shown upcoming with its stock', (await text('#pk-state')) === 'upcoming' && (await text('#pk-stock')) === '50 left of 50',
    `${await text('#pk-state')} / ${await text('#pk-stock')}`);
  check('the picker selects it', (await page.inputValue('#pick')) === id);

  // Change: a name, a later end, a user rate; only those are sent.
  const ends = Date.parse(await page.inputValue('#ch-ends')) + 1800e3;
  await page.fill('#ch-name', `managed ${stamp}`);
  await page.fill('#ch-ends', new Date(ends).toISOString());
  await page.fill('#ch-user-rate', '7');
  await page.click('#change');
  const changed = await result((t) => t.startsWith('changed'));
  check('the change form saves', changed === 'changed: name, ends_at, limits', changed);
  let r = row(id);
  check('PostgreSQL has the change', r[0] === `managed ${stamp}` && Number(r[3]) === Math.floor(ends / 1000), r.join('|'));
  check('the API has the new rate', ((await apiEvent(id)).limits || {}).user_rate === 7);
  check('the page shows the new rate', (await text('#pk-limits')) === 'user_rate 7');
  // A change the server refuses: the reason on the page, nothing changed.
  await page.fill('#ch-ends', new Date(Date.now() - 60e3).toISOString());
  await page.click('#change');
  check('a refused change shows the 409 and its reason', (await error((t) => t.includes('409'))).includes('conflict'));
  check('nothing changed by it', row(id)[3] === r[3]);
  await page.fill('#ch-ends', new Date(ends).toISOString());
  await page.click('#change');
  check('an unchanged form sends nothing', (await error((t) => t === 'nothing to change')) === 'nothing to change');

  // Restock: add, then set the total, then a removal past the unsold refused.
  await page.selectOption('#st-mode', 'add');
  await page.fill('#st-units', '25');
  await page.click('#restock');
  check('restock add', (await result((t) => t.includes('75'))) === 'restocked: 75 left of 75');
  await page.selectOption('#st-mode', 'total');
  await page.fill('#st-units', '40');
  await page.click('#restock');
  check('restock total', (await result((t) => t.includes('40'))) === 'restocked: 40 left of 40');
  r = row(id);
  check('PostgreSQL has the new total', r[1] === '40' && r[2] === '40', r.join('|'));
  await page.selectOption('#st-mode', 'add');
  await page.fill('#st-units', '-41');
  await page.click('#restock');
  check('a removal past the unsold is refused on the page', (await error((t) => t.includes('409'))).includes('409 conflict'));
  check('the stock is as it was', row(id)[1] === '40');

  // Pause: the event's orders are 503 paused; resume.
  const order = async () => {
    const res = await fetch(`${base}/api/v1/events/${id}/orders`, { method: 'POST', headers: { Authorization: 'Bearer ' + user } });
    return `${res.status} ${(await res.json()).error}`;
  };
  await page.click('#pause');
  check('pause', (await result((t) => t.startsWith('paused'))).startsWith('paused') && (await text('#pk-state')) === 'upcoming, paused');
  const paused = await order();
  check('its orders are 503 paused', paused === '503 paused', paused);
  await page.click('#resume');
  check('resume', (await result((t) => t.startsWith('resumed'))).startsWith('resumed') && (await text('#pk-state')) === 'upcoming');
  const resumed = await order();
  check('its orders are judged again (not started)', resumed === '403 not_started', resumed);

  // End now, then the record of it all.
  await page.click('#end-now');
  check('end now', (await result((t) => t.startsWith('ended'))).startsWith('ended at'));
  check('the page shows it ended', (await text('#pk-state')) === 'ended');
  check('PostgreSQL has it ended', Number(row(id)[3]) <= Math.ceil(Date.now() / 1000));
  const ended = await order();
  check('its orders are 403 ended', ended === '403 ended', ended);
  // The record, five entries a page: the first page, then the second.
  const record = await acts();
  check('the record\'s first page', record === 'create change restock restock pause' &&
    (await text('#audit-page')) === 'entries 1 to 5', `${record} / ${await text('#audit-page')}`);
  const actors = await page.locator('#audit-rows tr td:nth-child(2)').allTextContents();
  check('the record names the admin', actors.length === 5 && actors.every((a) => a === String(stamp * 100 + 1)), actors.join(' '));
  const what = await page.locator('#audit-rows td.what').allTextContents();
  check('the record shows what changed', what[1].includes(`"managed ${stamp}"`) && what[3].includes('stock_total 75 \u2192 40'), what.join(' | '));
  await page.locator('#manage').screenshot({ path: join(out, 'console-manage.png') });
  console.log(`screenshot: ${join(out, 'console-manage.png')}`);
  await page.click('#audit-next');
  const page2 = await waitText('#audit-page', (t) => t === 'entries 6 to 7');
  check('the record\'s next page', page2 === 'entries 6 to 7' && (await acts()) === 'resume end' &&
    (await page.isDisabled('#audit-next')) && !(await page.isDisabled('#audit-prev')), `${page2} / ${await acts()}`);
  await page.click('#audit-prev');
  check('and back', (await waitText('#audit-page', (t) => t === 'entries 1 to 5')) === 'entries 1 to 5');

  // Remove: no order, so deleted, everywhere.
  await page.click('#remove');
  check('remove deletes an event without orders', (await result((t) => t.startsWith('deleted'))) === `deleted event ${id}`);
  check('it is gone from PostgreSQL', sql(`select count(*) from seckill_event where id = ${id}`) === '0');
  check('it is gone from the picker', !(await page.locator('#pick option').evaluateAll((os) => os.map((o) => o.value))).includes(id));
  const gone = await fetch(`${base}/api/v1/events/${id}`, { headers: { Authorization: 'Bearer ' + admin } });
  check('its page is 404', gone.status === 404, String(gone.status));

  // The sold-out event: on sale, so remove is refused; ended, it is archived.
  await page.selectOption('#pick', soldId);
  await waitText('#pk-id', (t) => t.includes(soldId));
  await page.click('#remove');
  check('removing an event on sale is refused', (await error((t) => t.includes('409'))).includes('409 conflict'));
  await page.click('#end-now');
  await result((t) => t.startsWith('ended'));
  // An operator who opens the console after the sale ended: the page reloaded (nothing
  // remembered), the ended event is offered by the admin's list of ended events.
  await page.reload();
  await page.fill('#token', admin);
  await page.click('#signin-form button[type=submit]');
  const endedOpt = page.locator(`#pick option[value="${soldId}"]`);
  await endedOpt.waitFor({ state: 'attached', timeout: 10000 }).catch(() => {});
  check('after a reload the ended event is offered, marked ended',
    (await endedOpt.count()) === 1 && (await endedOpt.textContent()).endsWith(', ended'),
    (await endedOpt.count()) ? await endedOpt.textContent() : 'not offered');
  await page.selectOption('#pick', soldId);
  check('picked from the list, it shows ended', (await waitText('#pk-state', (t) => t === 'ended')) === 'ended');
  let endedActs = '';
  for (let i = 0; i < 50 && !endedActs.endsWith('end'); i++) {
    endedActs = await acts();
    if (!endedActs.endsWith('end')) await page.waitForTimeout(100);
  }
  check('its record is read, the end last', endedActs.endsWith('end'), endedActs);
  await page.click('#remove');
  check('remove archives an event with orders', (await result((t) => t.startsWith('archived'))).startsWith('archived'));
  check('PostgreSQL has it archived', row(soldId)[4] === 't');
  check('its record ends with end, archive', (await acts()).endsWith('end archive'), await acts());
  check('the picker keeps it, marked archived', (await page.locator(`#pick option[value="${soldId}"]`).textContent()).endsWith('archived'));
  const endedList = await (await fetch(`${base}/api/v1/events?state=ended&limit=100`, { headers: { Authorization: 'Bearer ' + admin } })).json();
  check('the archived event is off the ended list', !endedList.events.some((e) => e.event_id === soldId), JSON.stringify(endedList).slice(0, 300));
}

try {
  await page.goto(`${base}/console?consumer=${encodeURIComponent(consumer + '/metrics')}`);
  check('the console loads', (await page.title()) === 'seckill console');
  const csp = (await page.request.get(`${base}/console`)).headers()['content-security-policy'] || '';
  check('the page is served with a script-src self policy', csp.includes("script-src 'self'"), csp);

  // Bad and missing tokens: an error on the page, nothing changed.
  const before = events();
  await page.click('#create-form button[type=submit]');
  check('create without signing in: an error', (await waitText('#create-error', (t) => t.length > 0)).includes('sign in'));
  await page.fill('#token', 'not-a-token');
  await page.click('#signin-form button[type=submit]');
  check('a malformed token: an error', (await waitText('#signin-error', (t) => t.length > 0)).length > 0);
  await page.fill('#token', admin.slice(0, -4) + 'AAAA');
  await page.click('#signin-form button[type=submit]');
  check('a wrongly signed token: 401 on the page', (await waitText('#signin-error', (t) => t.includes('401'))).includes('unauthorized'));
  await page.fill('#token', user);
  await page.click('#signin-form button[type=submit]');
  check('a token without the admin role: refused', (await waitText('#signin-error', (t) => t.includes('admin'))).includes('admin'));
  check('nothing was created by any of them', events() === before, `${before} -> ${events()}`);
  check('still signed out', (await text('#who')) === 'not signed in');

  // Sign in and create an event through the form.
  await page.fill('#token', admin);
  await page.click('#signin-form button[type=submit]');
  check('signed in as admin', (await waitText('#who', (t) => t.includes('admin'))).includes('admin'));
  await page.fill('#ev-name', `console ${stamp}`);
  await page.fill('#ev-stock', '300');
  await page.fill('#ev-starts', '0');
  await page.click('#create-form button[type=submit]');
  const created = await waitText('#create-result', (t) => /created event \d+/.test(t));
  const eventId = (/(\d+)$/.exec(created || '') || [])[1];
  check('the form created the event', !!eventId && Number(sql(`select stock_total from seckill_event where id = ${eventId}`)) === 300, created);

  // The live view, then a burst from seckill-bench against that event.
  await page.click('#watch-form button[type=submit]');
  check('the live view shows the stock', (await waitText('#stock-left', (t) => t === '300')) === '300');
  execFileSync(`${bin}/seckill-bench`, ['--event', eventId, '--users', '2000', '--requests', '3000',
    '--connections', '16', '--out', join(out, 'bench'), '--pg', ''], { stdio: 'ignore', env: process.env });
  const api = await (await fetch(`${base}/api/v1/events/${eventId}`, { headers: { Authorization: 'Bearer ' + admin } })).json();
  const m202 = await metric202();
  const pageStock = await waitText('#stock-left', (t) => t === String(api.stock_left));
  check('stock left on the page matches the API', pageStock === String(api.stock_left), `${pageStock} vs ${api.stock_left}`);
  const page202 = await waitText('#accepted-total', (t) => t.replace(/,/g, '') === String(m202));
  check('202 count on the page matches /metrics', page202.replace(/,/g, '') === String(m202), `${page202} vs ${m202}`);
  check('the sale sold out', api.stock_left === 0, String(api.stock_left));
  const rows = await waitText('#rows-total', (t) => Number(t.replace(/,/g, '')) >= 300);
  check('the consumer\'s rows are shown', Number((rows || '').replace(/,/g, '')) >= 300, rows);
  await page.waitForTimeout(1100); // two refreshes more, so the charts show the tail
  await page.locator('#live').screenshot({ path: join(out, 'console-live.png') });
  console.log(`screenshot: ${join(out, 'console-live.png')}`);

  // The buyer's view: queued, then created.
  const r2 = await fetch(`${base}/api/v1/events`, {
    method: 'POST', headers: { Authorization: 'Bearer ' + admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `buyer ${stamp}`, stock: 5, starts_at: new Date(Date.now() - 1000).toISOString(), ends_at: new Date(Date.now() + 3600e3).toISOString() }),
  });
  const ev2 = (await r2.json()).event_id;
  await page.evaluate(() => {
    window.__statuses = [];
    const el = document.getElementById('order-status');
    new MutationObserver(() => window.__statuses.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
  });
  await page.fill('#buyer-token', user);
  await page.fill('#buyer-event', ev2);
  await page.click('#buy');
  const final = await waitText('#order-status', (t) => t === 'created', 30000);
  const statuses = await page.evaluate(() => window.__statuses);
  check('the buyer sees queued, then created', statuses[0] === 'queued' && final === 'created', JSON.stringify(statuses));
  check('the countdown says started', (await text('#countdown')) === 'started');
  const orderId = await text('#order-id');
  check('the order is in PostgreSQL', sql(`select status from seckill_order where order_id = ${orderId}`) === 'created');

  // The buyer's view with a challenge: fetched, solved in the page, sent with the order.
  const r3 = await fetch(`${base}/api/v1/events`, {
    method: 'POST', headers: { Authorization: 'Bearer ' + admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `challenge ${stamp}`, stock: 5, starts_at: new Date(Date.now() - 1000).toISOString(),
      ends_at: new Date(Date.now() + 3600e3).toISOString(), challenge: { kind: 'pow', difficulty: 12 } }),
  });
  check('an event with a challenge is created', r3.status === 201, String(r3.status));
  const ev3 = (await r3.json()).event_id;
  await page.fill('#buyer-event', ev3);
  await page.click('#buyer-load');
  check('the buyer sees the event\'s challenge', (await waitText('#challenge-state', (t) => t.includes('difficulty 12'))).includes('difficulty 12'));
  await page.click('#buy');
  const solved = await waitText('#challenge-state', (t) => t.startsWith('solved'), 30000);
  check('the page solved the challenge', (solved || '').startsWith('solved'), solved);
  const final3 = await waitText('#order-status', (t) => t === 'created', 30000);
  check('the order with its solution is created', final3 === 'created', final3);
  const order3 = await text('#order-id');
  check('that order is in PostgreSQL for the challenge event',
    sql(`select event_id from seckill_order where order_id = ${order3}`) === ev3);
  // A hidden order path: the page asks for it and orders by it.
  const r4 = await fetch(`${base}/api/v1/events`, {
    method: 'POST', headers: { Authorization: 'Bearer ' + admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `path ${stamp}`, stock: 5, starts_at: new Date(Date.now() - 1000).toISOString(),
      ends_at: new Date(Date.now() + 3600e3).toISOString(), challenge: { kind: 'path' } }),
  });
  const ev4 = (await r4.json()).event_id;
  await page.fill('#buyer-event', ev4);
  await page.click('#buy');
  const order4 = await waitText('#order-id', (t) => t !== order3 && /^\d+$/.test(t), 30000);
  const final4 = await waitText('#order-status', (t) => t === 'created', 30000);
  check('an order by the hidden path is created', final4 === 'created' && order4 !== order3 &&
    sql(`select event_id from seckill_order where order_id = ${order4}`) === ev4, `${final4} ${order4}`);
  check('the page shows the path it was given', (await text('#challenge-state')).includes(`/api/v1/events/${ev4}/orders/`));
  // back to the solved challenge for the screenshot
  await page.fill('#buyer-event', ev3);
  await page.click('#buyer-load');
  await page.locator('#buyer').screenshot({ path: join(out, 'console-challenge.png') });
  console.log(`screenshot: ${join(out, 'console-challenge.png')}`);
  // What solving costs this browser (one run per difficulty, the first counter from 0:
  // the tries vary with the challenge, the rate does not).
  const rates = await page.evaluate(async () => {
    const out = [];
    for (const bits of [12, 16]) {
      const s = await window.seckillSolveChallenge('1.1.' + bits + '.1800000000000.0123456789abcdef.0123456789abcdef0123456789abcdef', bits);
      out.push({ bits, tries: s.tries, ms: Math.round(s.ms), hashes_per_s: Math.round(s.tries / (s.ms / 1000)) });
    }
    return out;
  });
  console.log(`browser solver: ${JSON.stringify(rates)}`);
  check('the page\'s solver runs', rates.every((x) => x.tries > 0 && x.hashes_per_s > 0), JSON.stringify(rates));

  await manageEvents(eventId);

  const origin = new URL(base).origin;
  check('tokens were sent to the page\'s own origin only', sent.every((s) => !s.auth || new URL(s.url).origin === origin),
    JSON.stringify(sent.filter((s) => s.auth && new URL(s.url).origin !== origin).map((s) => s.url)));
  check('no script error on the page', errors.length === 0, errors.join('; '));
} catch (e) {
  check('the browser run', false, e.stack);
  await page.screenshot({ path: join(out, 'console-failure.png') }).catch(() => {});
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
