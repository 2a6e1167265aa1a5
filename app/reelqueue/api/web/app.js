// The ReelQueue dashboard: sign-in, then the accounts, the queue, the jobs, what needs
// attention, the results and the machines, kept current by the event stream (no
// polling). Every value from the server is shown as text (dom.js); actions appear for an
// admin token only, and the server refuses them to any other (403).

import { Api, Refused } from "./api.js";
import { ago, clear, cut, data, el, money, stamp } from "./dom.js";
import { LiveStream } from "./stream.js";

const TOKEN_KEY = "reelqueue.token";
const PAGE = 50;
const GALLERY_PAGE = 24;
const REFRESH_DELAY_MS = 250;

const $ = (id) => document.getElementById(id);

const state = {
  api: null,
  stream: null,
  admin: false,
  stateNames: {},
  machines: new Map(),
  cursors: [0],
  nextCursor: null,
  selected: null,
  galleryCursor: 0,
  refreshTimer: null,
  filtersFilled: false,
};

// -- sign-in -------------------------------------------------------------------------
function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY);
}

function signOut(message = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(TOKEN_KEY);
  if (state.stream) state.stream.stop();
  if (state.api) state.api.close();
  state.stream = null;
  state.api = null;
  state.admin = false;
  state.selected = null;
  state.cursors = [0];
  state.galleryRead = false;
  clearTimeout(state.refreshTimer);
  // Nothing of the last token's view stays in the page (its buttons least of all).
  for (const id of ["accounts", "attention", "gallery", "detail-body", "player", "who"]) clear($(id));
  for (const id of ["batches", "jobs", "machines"]) clear($(id).tBodies[0]);
  $("detail").hidden = true;
  $("player").hidden = true;
  document.body.classList.remove("admin");
  $("main").hidden = true;
  $("sign-out").hidden = true;
  $("banner").hidden = true;
  $("live").textContent = "";
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  $("token").value = "";
  $("token").focus();
}

async function signIn(token, remember) {
  const api = new Api(token, signOut);
  let who;
  try {
    who = await api.get("/v1/token");
  } catch (error) {
    if (!(error instanceof Refused && error.status === 401)) {
      $("sign-in-error").textContent = `The server could not be asked: ${cut(error.message, 200)}`;
    }
    return;
  }
  (remember ? localStorage : sessionStorage).setItem(TOKEN_KEY, token);
  state.api = api;
  state.admin = who.scope === "admin";
  document.body.classList.toggle("admin", state.admin);
  $("who").textContent = `Signed in as ${cut(who.name, 80)} (${cut(who.scope, 20)}: ${
    state.admin ? "sees everything and may act" : "sees everything, acts on nothing"}).`;
  $("sign-in").hidden = true;
  $("main").hidden = false;
  $("sign-out").hidden = false;
  $("main").focus();
  // A new stream starts at the present (what came before is read, not replayed).
  delete document.documentElement.dataset.firstEvent;
  delete document.documentElement.dataset.eventsSeen;
  state.stream = new LiveStream({
    token,
    onEvent: (event) => eventArrived(event),
    onState: (what) => streamState(what),
    onUnauthorized: signOut,
  });
  state.stream.start();
}

function streamState(what) {
  state.streamLive = what === "live";
  if (what === "live") {
    $("banner").hidden = true;
    $("live").textContent = "Live";
    // the first connection (or one after a drop): read everything once, then only on events
    refreshAll();
  } else if (what === "lost") {
    $("banner").hidden = false;
    $("banner").textContent = "Live updates are interrupted: reconnecting… What you see may be out of date.";
    $("live").textContent = "Reconnecting";
  } else if (what === "reconnecting") {
    $("live").textContent = "Reconnecting";
  }
}

function eventArrived(event) {
  // What the stream delivered, on the page itself (a reconnect must lose none: the
  // browser test counts them against the ledger).
  const root = document.documentElement.dataset;
  if (typeof event.seq === "number") {
    if (!root.firstEvent) root.firstEvent = String(event.seq);
    root.lastEvent = String(event.seq);
    root.eventsSeen = String(Number(root.eventsSeen || 0) + 1);
  }
  if (event && event.event === "completed") state.galleryStale = true;
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(refreshAll, REFRESH_DELAY_MS);
}

// -- reads -----------------------------------------------------------------------------
// Where the keyboard focus is, so a refresh that rebuilds a list gives it back.
function focusPlace() {
  const active = document.activeElement;
  if (!active || active === document.body) return null;
  const item = active.closest("[data-job], [data-account], [data-batch], [data-machine]");
  const section = active.closest("section");
  if (!item || !section || !section.id && !section.getAttribute("aria-labelledby")) return null;
  const buttons = [...item.querySelectorAll("button")];
  return { section: section.getAttribute("aria-labelledby") || section.id,
           key: Object.entries(item.dataset)[0], index: buttons.indexOf(active) };
}

function restoreFocus(place) {
  if (!place || (document.activeElement && document.activeElement !== document.body)) return;
  const section = document.querySelector(`section[aria-labelledby="${place.section}"]`);
  if (!section || !place.key) return;
  const [name, value] = place.key;
  const attr = "data-" + name.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase());
  const item = [...section.querySelectorAll(`[${attr}]`)].find((n) => n.getAttribute(attr) === value);
  const buttons = item ? [...item.querySelectorAll("button")] : [];
  (buttons[place.index] || buttons[0])?.focus({ preventScroll: true });
}

async function refreshAll() {
  if (!state.api) return;
  const place = focusPlace();
  try {
    await Promise.all([loadMachines(), loadQueue()]);
    const gallery = state.galleryStale || !state.galleryRead;
    state.galleryStale = false;
    state.galleryRead = true;
    // An open question (a retry's price, "create it again?") is not swept away by news.
    const asking = (id) => document.querySelector(`#${id} .confirm`) !== null;
    await Promise.all([loadAccounts(), loadJobs(), asking("attention") ? null : loadAttention(),
                       gallery ? loadGallery(true) : null,
                       state.selected && !asking("detail-body") ? showJob(state.selected, false) : null]);
    restoreFocus(place);
    if (state.streamLive) $("live").textContent = "Live"; // a read that failed before is over
  } catch (error) {
    if (state.api && !(error instanceof Refused && [0, 401].includes(error.status))) {
      $("live").textContent = `Could not read: ${cut(error.message, 120)}`;
    }
  }
}

function stateName(code, words) {
  if (words && words.name) return words.name;
  return state.stateNames[code] || String(code).toLowerCase();
}

function actionButton(label, handler, extra = {}) {
  if (!state.admin) return null;
  const button = el("button", { type: "button", className: "action", ...extra }, label);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try { await handler(); } catch (error) { showError(button, error); }
    finally { button.disabled = false; }
  });
  return button;
}

function showError(near, error) {
  const note = el("p", { className: "error", role: "alert", text: cut(error.message, 300) });
  near.after(note);
}

async function loadAccounts() {
  const [accounts, spend, queue] = await Promise.all([
    state.api.get("/v1/accounts"), state.api.get("/v1/spend"), state.queue]);
  const spent = new Map((spend.accounts || []).map((a) => [a.account, a]));
  const byAccount = (queue && queue.by_account) || {};
  const box = clear($("accounts"));
  if (!accounts.accounts.length) box.append(el("p", { text: "No accounts yet." }));
  for (const account of accounts.accounts) {
    const counts = byAccount[account.name] || {};
    const today = spent.get(account.name);
    const words = account.state_words || {};
    const card = el("article", { className: "card", "data-account": account.name },
      el("h3", {}, data(account.name, 80)),
      el("p", { className: "provider" }, data(account.provider, 40)),
      el("p", { className: "state" }, el("strong", {}, data(words.name, 80))),
      words.hint ? el("p", { className: "hint" }, data(words.hint, 300)) : null,
      account.status_detail ? el("p", { className: "reason" }, data(account.status_detail, 300)) : null,
      account.cooldown_until ? el("p", { className: "reason", text: `cooling until ${stamp(account.cooldown_until)}` }) : null,
      account.balance ? el("p", { className: "balance" }, data(account.balance, 200)) : null,
      el("dl", {},
        el("dt", { text: "live / limit" }), el("dd", { className: "live-limit", text: `${account.live} / ${account.capacity}` }),
        el("dt", { text: "done / failed" }), el("dd", { className: "done-failed", text: `${counts.COMPLETED || 0} / ${counts.FAILED || 0}` }),
        el("dt", { text: "spent today" }), el("dd", { text: money(today ? today.spent_today : 0) }),
        account.daily_cap !== null && account.daily_cap !== undefined
          ? el("dt", { text: "daily cap" }) : null,
        account.daily_cap !== null && account.daily_cap !== undefined
          ? el("dd", { text: money(account.daily_cap) }) : null),
      actionButton(account.enabled ? "Pause account" : "Resume account", async () => {
        await state.api.post(`/v1/accounts/${encodeURIComponent(account.name)}/${account.enabled ? "pause" : "resume"}`);
        await refreshAll();
      }));
    box.append(card);
  }
}

async function loadQueue() {
  state.queue = state.api.get("/v1/batches");
  const queue = await state.queue;
  state.stateNames = queue.state_names || {};
  const body = clear($("batches").tBodies[0]);
  for (const batch of queue.batches) {
    const counts = Object.entries(batch.counts).map(
      ([code, n]) => el("span", { className: "count", "data-state": code, text: `${n} ${stateName(code)}` }));
    body.append(el("tr", { "data-batch": String(batch.id) },
      el("th", { scope: "row" }, data(batch.name, 80), batch.paused ? el("span", { className: "tag", text: "paused" }) : null),
      el("td", { className: "counts" }, ...counts),
      el("td", { className: "total", text: String(batch.jobs) }),
      el("td", {}, actionButton(batch.paused ? "Resume batch" : "Pause batch", async () => {
        await state.api.post(`/v1/batches/${batch.id}/${batch.paused ? "resume" : "pause"}`);
        await refreshAll();
      }))));
  }
  if (!state.filtersFilled) fillFilters(queue);
}

function fillFilters(queue) {
  state.filtersFilled = true;
  const states = $("state");
  for (const [code, name] of Object.entries(state.stateNames)) {
    states.append(el("option", { value: code, text: name }));
  }
  const batches = $("batch");
  for (const batch of queue.batches) {
    batches.append(el("option", { value: String(batch.id), text: cut(batch.name, 60) }));
  }
}

function machineLabel(machine) {
  // several ReelQueues may share one host: the pid tells them apart
  return machine.pid ? `${machine.host} · pid ${machine.pid}` : machine.host;
}

function machineName(instance) {
  if (!instance) return "—";
  const machine = state.machines.get(instance);
  return machine ? machineLabel(machine) : instance.slice(0, 12);
}

async function loadJobs() {
  const params = { cursor: state.cursors[state.cursors.length - 1], limit: PAGE,
                   q: $("q").value.trim(), batch: $("batch").value,
                   state: $("state").value ? [$("state").value] : [] };
  const page = await state.api.get("/v1/jobs", params);
  state.nextCursor = page.next_cursor;
  $("next-page").disabled = page.next_cursor === null;
  $("first-page").disabled = state.cursors.length === 1;
  const body = clear($("jobs").tBodies[0]);
  if (!page.jobs.length) {
    body.append(el("tr", {}, el("td", { colspan: "5", text: "No jobs match." })));
  }
  for (const job of page.jobs) {
    const open = el("button", { type: "button", className: "link", "aria-label": `Open job ${job.id}` }, `#${job.id}`);
    open.addEventListener("click", () => showJob(job.id, true));
    body.append(el("tr", { "data-job": String(job.id), "data-state": job.state },
      el("td", {}, open),
      el("td", {}, data(job.name || job.prompt, 80)),
      el("td", { className: "job-state" }, data(stateName(job.state, job.state_words), 60)),
      el("td", {}, data(job.account || "—", 40)),
      el("td", { className: "machine" }, data(job.instance ? machineName(job.instance)
        : (job.output && job.output.host) || "—", 80))));
  }
}

async function showJob(jobId, focus) {
  state.selected = jobId;
  const [job, history] = await Promise.all([
    state.api.get(`/v1/jobs/${jobId}`), state.api.get(`/v1/jobs/${jobId}/history`)]);
  const box = clear($("detail-body"));
  $("detail").hidden = false;
  $("detail-title").textContent = `Job ${job.id}`;
  const words = job.state_words || {};
  box.append(
    el("p", {}, el("strong", {}, data(job.name || `Job ${job.id}`, 120))),
    el("p", { className: "prompt" }, data(job.prompt, 2000, "data block")),
    el("p", {}, "State: ", el("strong", { className: "detail-state" }, data(words.name, 80))),
    words.hint ? el("p", { className: "hint" }, data(words.hint, 400)) : null,
    job.error ? el("p", { className: "error-text" }, "Error: ", data(job.error.message || job.error.label, 500)) : null,
    job.create_evidence ? el("p", { className: "hint evidence" }, data(job.create_evidence.words, 800)) : null,
    el("p", { text: `Attempts ${job.attempts} of ${job.max_attempts}` + (job.cost ? ` · cost ${money(job.cost)}` : "") }));
  const actions = el("div", { className: "actions" });
  if (state.admin && ["FAILED", "CANCELLED", "PARKED"].includes(job.state)) {
    actions.append(actionButton("Retry…", () => planRetry(job, actions)));
  }
  if (state.admin && !["COMPLETED", "FAILED", "CANCELLED"].includes(job.state)) {
    actions.append(actionButton("Cancel job", async () => {
      await state.api.post(`/v1/jobs/${job.id}/cancel`);
    }));
  }
  if (job.state === "COMPLETED") {
    const play = el("button", { type: "button" }, "Play video");
    play.addEventListener("click", () => playVideo(job));
    actions.append(play);
  }
  box.append(actions);
  box.append(el("h3", { text: "History" }));
  if (history.pruned_before) {
    box.append(el("p", { className: "note", text: `History pruned before ${stamp(history.pruned_before)}.` }));
  }
  const rows = history.entries.map((entry) => el("tr", {},
    el("td", { text: stamp(entry.at) }), el("td", {}, data(entry.words, 60)),
    el("td", {}, data(entry.account || "", 40)), el("td", {}, data(entry.detail, 300))));
  box.append(el("div", { className: "scroll" }, el("table", { className: "table history" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Time" }), el("th", { scope: "col", text: "Event" }),
      el("th", { scope: "col", text: "Account" }), el("th", { scope: "col", text: "Details" }))),
    el("tbody", {}, ...rows))));
  if (focus) $("detail").scrollIntoView({ block: "start" });
}

async function planRetry(job, near) {
  const plan = await state.api.get(`/v1/jobs/${job.id}/retry-plan`);
  const box = el("div", { className: "confirm", role: "group", "aria-label": "Retry plan" },
    el("p", { className: "plan" }, data(plan.summary, 600)),
    el("p", { className: "price", text: plan.pays ? `Price: ${plan.price}` : "No charge." }));
  if (plan.retryable) {
    const yes = actionButton(plan.pays ? `Retry and pay ${plan.price}` : "Retry", async () => {
      const done = await state.api.post(`/v1/jobs/${job.id}/retry`);
      box.className = "note"; // answered: the next news may redraw the detail
      box.replaceChildren(el("p", { role: "status", text: done.requeued ? "Queued again." : "Nothing was queued (the job changed meanwhile)." }));
    }, { className: "action confirm-retry" });
    const no = el("button", { type: "button" }, "Keep it as it is");
    no.addEventListener("click", () => { box.remove(); refreshAll(); });
    box.append(yes, no);
  }
  near.after(box);
  box.querySelector("button")?.focus();
}

async function loadAttention() {
  const answer = await state.api.get("/v1/attention");
  const list = clear($("attention"));
  if (!answer.jobs.length) list.append(el("li", { text: "Nothing needs you." }));
  for (const item of answer.jobs) {
    const li = el("li", { "data-job": String(item.id) },
      el("p", {}, el("strong", {}, data(item.name || `Job ${item.id}`, 80)), " · ",
        data(stateName(item.state, item.state_words), 60)),
      el("p", { className: "prompt" }, data(item.prompt, 300)),
      el("p", { className: "hint" }, data(item.what_to_do, 800)),
      item.create_evidence ? el("p", { className: "hint evidence" }, data(item.create_evidence.words, 800)) : null);
    const actions = el("div", { className: "actions" });
    const open = el("button", { type: "button" }, "Open job");
    open.addEventListener("click", () => showJob(item.id, true));
    actions.append(open);
    if (state.admin) {
      actions.append(actionButton(item.unknown ? "Look again (no charge)" : "Retry…",
        () => planRetry(item, actions)));
      if (item.unknown) {
        actions.append(actionButton("Create it again…", async () => {
          const ok = el("div", { className: "confirm" },
            el("p", { text: "The first create may already be charged: creating it again may pay twice." }));
          const yes = actionButton("Create again and pay", async () => {
            const done = await state.api.post(`/v1/jobs/${item.id}/resolve/create-again`);
            ok.className = "note";
            ok.replaceChildren(el("p", { role: "status" }, data(done.summary, 400)));
          });
          ok.append(yes);
          actions.after(ok);
        }));
      }
    }
    li.append(actions);
    list.append(li);
  }
}

async function link(jobId, kind) {
  const made = await state.api.post(`/v1/jobs/${jobId}/links`, { kind });
  if (!made.url.startsWith("/links/")) throw new Error("an unexpected link");
  return made.url;
}

async function loadGallery(reset) {
  if (reset) state.galleryCursor = 0;
  const page = await state.api.get("/v1/jobs", { state: ["COMPLETED"], limit: GALLERY_PAGE, cursor: state.galleryCursor });
  const list = $("gallery");
  if (reset) clear(list);
  state.galleryCursor = page.next_cursor;
  $("more-results").hidden = page.next_cursor === null;
  if (reset && !page.jobs.length) list.append(el("li", { text: "No finished videos yet." }));
  for (const job of page.jobs) {
    const img = el("img", { alt: `First picture of ${cut(job.name || `job ${job.id}`, 60)}`, width: "240", height: "135", loading: "lazy" });
    const button = el("button", { type: "button", className: "thumb", "aria-label": `Play ${cut(job.name || `job ${job.id}`, 60)}` }, img);
    button.addEventListener("click", () => playVideo(job));
    list.append(el("li", { "data-job": String(job.id) }, el("figure", {}, button,
      el("figcaption", {}, data(job.name || job.prompt, 60)))));
    link(job.id, "thumbnail").then((url) => { img.src = url; }).catch(() => { img.alt = "no picture"; });
  }
}

async function playVideo(job) {
  const url = await link(job.id, "video");
  const player = clear($("player"));
  player.hidden = false;
  const video = el("video", { controls: true, preload: "metadata", src: url });
  const close = el("button", { type: "button" }, "Close player");
  close.addEventListener("click", () => { video.pause(); clear(player); player.hidden = true; });
  player.append(el("p", {}, data(job.name || `Job ${job.id}`, 80)), video, close);
  player.scrollIntoView({ block: "nearest" });
  video.focus();
}

async function loadMachines() {
  const answer = await state.api.get("/v1/instances");
  state.machines = new Map(answer.machines.map((m) => [m.id, m]));
  const body = clear($("machines").tBodies[0]);
  for (const machine of answer.machines) {
    body.append(el("tr", { "data-machine": machine.id },
      el("th", { scope: "row" }, data(machineLabel(machine), 80), machine.this_machine ? el("span", { className: "tag", text: "this server" }) : null),
      el("td", { className: "machine-state", text: machine.state }),
      el("td", { className: "heartbeat", text: machine.heartbeat_at ? `${stamp(machine.heartbeat_at)} (${ago(machine.silent_for)} when read)` : "—" }),
      el("td", { className: "renders", text: String(machine.live_renders) })));
  }
}

// -- wiring ----------------------------------------------------------------------------
function wire() {
  $("sign-in-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (!token) { $("sign-in-error").textContent = "Paste a token first."; return; }
    $("sign-in-error").textContent = "";
    signIn(token, $("remember").checked);
  });
  $("sign-out").addEventListener("click", () => signOut("Signed out."));
  $("filters").addEventListener("submit", (event) => {
    event.preventDefault();
    state.cursors = [0];
    loadJobs().catch(() => {});
  });
  $("next-page").addEventListener("click", () => {
    if (state.nextCursor === null) return;
    state.cursors.push(state.nextCursor);
    loadJobs().catch(() => {});
  });
  $("first-page").addEventListener("click", () => { state.cursors = [0]; loadJobs().catch(() => {}); });
  $("more-results").addEventListener("click", () => loadGallery(false).catch(() => {}));
}

wire();
const token = storedToken();
if (token) signIn(token, localStorage.getItem(TOKEN_KEY) === token);
else signOut("");
