// The API with the signed-in token as a bearer header (never in a URL or a cookie).

export class Refused extends Error {
  constructor(status, detail) {
    super(detail || `refused (${status})`);
    this.status = status;
  }
}

export class Api {
  constructor(token, onUnauthorized) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
    this.closed = false;
  }

  /** Signed out: an answer still on its way is dropped, never shown. */
  close() { this.closed = true; }

  headers(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async request(method, path, params) {
    const url = new URL(path, location.origin);
    for (const [name, value] of Object.entries(params || {})) {
      if (Array.isArray(value)) value.forEach((v) => url.searchParams.append(name, v));
      else if (value !== null && value !== undefined && value !== "") url.searchParams.set(name, value);
    }
    if (this.closed) throw new Refused(0, "signed out");
    const answer = await fetch(url, { method, headers: this.headers(), cache: "no-store",
                                      credentials: "omit", redirect: "error" });
    if (this.closed) throw new Refused(0, "signed out");
    if (answer.status === 401) {
      this.close();
      this.onUnauthorized("The server refused the token (expired or revoked). Sign in again.");
      throw new Refused(401, "signed out");
    }
    let body = null;
    try { body = await answer.json(); } catch { body = null; }
    if (!answer.ok) throw new Refused(answer.status, body && typeof body.detail === "string" ? body.detail : null);
    return body;
  }

  get(path, params) { return this.request("GET", path, params); }
  post(path, params) { return this.request("POST", path, params); }
}
