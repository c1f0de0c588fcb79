// The live-updates client (docs/contract.md "Live updates"): one WebSocket per tab, channels subscribed
// on demand, re-subscribed after a reconnect, a ping every few minutes so API Gateway's 10-minute
// idle limit never closes it, a new connection before the token expires (private channels end
// there), and frames deduplicated by `eventId`.
import { loadConfig, session } from "./session.js";

const PING_EVERY_MS = 4 * 60 * 1000;
// How long before its token expires a connection is replaced (its private channels stop then).
const RENEW_BEFORE_MS = 30 * 1000;
// How long a channel no page follows stays subscribed: the next page, if it follows it too,
// takes it over without a message.
const DROP_AFTER_MS = 1000;

class Live {
  constructor() {
    this.handlers = new Map(); // channel -> Set of handlers
    this.seen = new Set();
    this.socket = null;
    this.retry = 500;
    this.onReconnect = new Set();
    this.confirmed = new Set(); // channels the server confirmed on this connection
    this.dropping = new Set(); // channels no page follows any more, unsubscribed shortly
    this.dropTimer = null;
    this.requested = new Set(); // channels a subscribe was sent for on this connection
  }

  /** Calls `handler(event, channel)` for each event on `channel`; returns the unsubscriber. */
  subscribe(channel, handler) {
    if (!this.handlers.has(channel)) {
      this.handlers.set(channel, new Set());
      // Still subscribed from the page before (a vendor moving between the console's pages):
      // kept, not unsubscribed and subscribed again (two messages a server may handle in
      // either order). Asked for only if it was not asked for on this connection.
      const kept = this.dropping.delete(channel) && this.requested.has(channel);
      if (!kept) this.request([channel]);
    }
    this.handlers.get(channel).add(handler);
    this.connect();
    return () => {
      const set = this.handlers.get(channel);
      set?.delete(handler);
      if (set && set.size === 0) {
        this.handlers.delete(channel);
        this.drop([channel]);
      }
    };
  }

  /** Drops every subscription (a new page subscribes to its own). */
  reset() {
    const channels = [...this.handlers.keys()];
    this.handlers.clear();
    this.onReconnect.clear();
    this.drop(channels);
  }

  /** Unsubscribes from `channels` a moment later, unless a page subscribes to one meanwhile. */
  drop(channels) {
    if (!channels.length) return;
    for (const channel of channels) this.dropping.add(channel);
    clearTimeout(this.dropTimer);
    this.dropTimer = setTimeout(() => {
      const gone = [...this.dropping].filter((c) => !this.handlers.has(c));
      this.dropping.clear();
      if (!gone.length) return;
      for (const channel of gone) {
        this.confirmed.delete(channel);
        this.requested.delete(channel);
      }
      document.body.dataset.subscribed = [...this.confirmed].join(" ");
      this.send({ action: "unsubscribe", channels: gone });
    }, DROP_AFTER_MS);
  }

  /** A new token (sign-in or sign-out): the connection's identity changes, so reconnect. */
  restart() {
    if (this.socket) this.socket.close(1000, "identity changed");
  }

  /** Sends `message` if the connection is open; whether it was sent. */
  send(message) {
    if (this.socket?.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(message));
    return true;
  }

  /** Subscribes to `channels` on the open connection (else when it opens). */
  request(channels) {
    if (this.send({ action: "subscribe", channels })) for (const channel of channels) this.requested.add(channel);
  }

  async connect() {
    if (this.socket) return;
    const { webSocketUrl } = await loadConfig();
    if (!webSocketUrl || this.socket) return;
    const token = session.token();
    const url = token ? `${webSocketUrl}?token=${encodeURIComponent(token)}` : webSocketUrl;
    const socket = new WebSocket(url);
    this.socket = socket;
    let ping;
    let renew;
    socket.addEventListener("open", () => {
      this.retry = 500;
      this.state(true);
      const channels = [...this.handlers.keys()];
      if (channels.length) this.request(channels);
      ping = setInterval(() => this.send({ action: "ping" }), PING_EVERY_MS);
      // Private channels end at the token's expiry: open the next connection with the token
      // the session holds by then (or anonymously), a little before.
      const exp = session.claims()?.exp;
      if (exp) {
        const wait = Math.max(exp * 1000 - Date.now() - RENEW_BEFORE_MS, 0);
        renew = setTimeout(() => socket.close(1000, "token expiring"), wait);
      }
      // Anything missed while disconnected is read again over HTTP.
      for (const refresh of this.onReconnect) refresh();
    });
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", () => {
      clearInterval(ping);
      clearTimeout(renew);
      this.socket = null;
      this.confirmed.clear();
      this.dropping.clear();
      this.requested.clear();
      document.body.dataset.subscribed = "";
      this.state(false);
      if (this.handlers.size) {
        setTimeout(() => this.connect(), this.retry);
        this.retry = Math.min(this.retry * 2, 30000);
      }
    });
  }

  receive(data) {
    let frame;
    try { frame = JSON.parse(data); } catch { return; }
    if (frame.type === "subscribed") {
      for (const channel of frame.channels) this.confirmed.add(channel);
      document.body.dataset.subscribed = [...this.confirmed].join(" ");
      return;
    }
    if (frame.type === "error") {
      console.warn("live update refused", frame);
      return;
    }
    // API Gateway's answer when a route's function failed (`{"message":"Internal server
    // error",...}`): the subscription may not stand, so subscribe again to what is not yet
    // confirmed (a subscription is idempotent), after a moment.
    if (!frame.type && frame.message) {
      const pending = [...this.handlers.keys()].filter((c) => !this.confirmed.has(c));
      if (pending.length) setTimeout(() => this.send({ action: "subscribe", channels: pending }), 1000);
      return;
    }
    // A crowded channel sends a digest: the window's events in one frame, in order.
    const events = frame.type === "event" ? [frame.event] : frame.type === "events" ? frame.events : [];
    for (const event of events) this.deliver(frame.channel, event);
  }

  deliver(channel, event) {
    const key = `${channel}/${event.eventId}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (this.seen.size > 2000) this.seen = new Set([...this.seen].slice(-1000));
    for (const handler of this.handlers.get(channel) ?? []) handler(event, channel);
  }

  state(connected) {
    const badge = document.getElementById("live-state");
    badge.textContent = connected ? "live" : "offline";
    badge.classList.toggle("on", connected);
    document.body.dataset.live = connected ? "on" : "off";
  }
}

export const live = new Live();
