// The live event stream: GET /v1/events read with fetch and a streaming reader
// (EventSource cannot send the bearer header). The last event id is kept; a reconnect
// after a drop (back-off 0.5 s doubling to 10 s) sends it as Last-Event-ID, so the
// server resends exactly what was missed. Nothing is polled: the page asks the API
// again only when an event says something changed.

const MAX_BACKOFF_MS = 10000;
const SILENT_MS = 5000; // the server sends a keep-alive every second

export class LiveStream {
  constructor({ token, onEvent, onState, onUnauthorized }) {
    this.token = token;
    this.onEvent = onEvent;
    this.onState = onState;
    this.onUnauthorized = onUnauthorized;
    this.lastId = null;
    this.stopped = false;
    this.backoff = 500;
    this.controller = null;
    this.lostTimer = null;
    this.silenceTimer = null;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.lostTimer);
    clearTimeout(this.silenceTimer);
    if (this.controller) this.controller.abort();
  }

  // After 5 s without the stream the banner shows; it goes as soon as the stream is back.
  lost() {
    if (this.lostTimer === null) {
      this.lostTimer = setTimeout(() => this.onState("lost"), SILENT_MS);
    }
  }

  heard() {
    clearTimeout(this.lostTimer);
    this.lostTimer = null;
    clearTimeout(this.silenceTimer);
    this.silenceTimer = setTimeout(() => {
      this.lost();
      if (this.controller) this.controller.abort(); // a stalled connection: reconnect
    }, SILENT_MS);
  }

  async connect() {
    if (this.stopped) return;
    this.controller = new AbortController();
    const headers = { Authorization: `Bearer ${this.token}`, Accept: "text/event-stream" };
    if (this.lastId !== null) headers["Last-Event-ID"] = this.lastId;
    try {
      const answer = await fetch("/v1/events", { headers, signal: this.controller.signal,
                                                 cache: "no-store", credentials: "omit" });
      if (answer.status === 401) {
        this.stop();
        this.onUnauthorized("The server refused the token (expired or revoked). Sign in again.");
        return;
      }
      if (!answer.ok || !answer.body) throw new Error(`events: ${answer.status}`);
      this.backoff = 500;
      this.heard();
      this.onState("live", this.lastId !== null);
      await this.read(answer.body.getReader());
    } catch (error) {
      // a dropped connection, a stopped server: reconnect below
    }
    clearTimeout(this.silenceTimer);
    if (this.stopped) return;
    this.lost();
    this.onState("reconnecting");
    const wait = this.backoff;
    this.backoff = Math.min(MAX_BACKOFF_MS, this.backoff * 2);
    setTimeout(() => this.connect(), wait);
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      this.heard();
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        this.dispatch(block);
      }
      if (buffer.length > 4 * 1024 * 1024) throw new Error("an event over 4 MiB");
    }
  }

  dispatch(block) {
    let id = null;
    let payload = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("id: ")) id = line.slice(4);
      else if (line.startsWith("data: ")) payload += line.slice(6);
    }
    if (id === null || !/^[0-9]+$/.test(id)) return; // a comment (keep-alive)
    this.lastId = id;
    let event = null;
    try { event = JSON.parse(payload); } catch { return; }
    this.onEvent(event);
  }
}
