/**
 * The server's live changes (GET /api/v1/stream, server-sent events read
 * with fetch so the token goes as a bearer header, which EventSource cannot
 * send). Each event names what changed; the matching queries are marked
 * stale and refetched by whichever page shows them. After a server restart
 * it reconnects by itself, waiting a little longer after each failure.
 */
import type { QueryClient } from "@tanstack/react-query";
import { useSyncExternalStore } from "react";
import { admin, open } from "./api.ts";
import type { EventView } from "./types.ts";

export type StreamStatus = "connecting" | "live" | "reconnecting";

/** Which query keys each event kind makes stale (keys start with the resource's name). */
const invalidates: Record<string, readonly string[]> = {
  nodes: ["nodes", "node", "headroom", "overview", "card-memory"],
  models: ["models", "model", "overview", "headroom"],
  replicas: ["replicas", "models", "model", "nodes", "overview", "card-memory"],
  events: ["events", "overview"],
  keys: ["keys", "usage"],
  canaries: ["canaries", "canary"],
  audit: ["audit"],
};

let status: StreamStatus = "connecting";
const statusListeners = new Set<() => void>();
const eventListeners = new Set<(events: readonly EventView[]) => void>();

function setStatus(next: StreamStatus): void {
  status = next;
  for (const listener of statusListeners) listener();
}

export function useStreamStatus(): StreamStatus {
  return useSyncExternalStore(
    (listener) => {
      statusListeners.add(listener);
      return () => statusListeners.delete(listener);
    },
    () => status,
  );
}

/** Events as they arrive on the stream, for the pages that list them live. */
export function onLiveEvents(listener: (events: readonly EventView[]) => void): () => void {
  eventListeners.add(listener);
  return () => eventListeners.delete(listener);
}

interface StreamMessage {
  readonly event: string;
  readonly data: string;
}

/** Splits an SSE body into messages (the `event:` and `data:` lines of each blank-line-ended block). */
export function* readMessages(buffer: { text: string }): Generator<StreamMessage> {
  for (;;) {
    const end = buffer.text.search(/\r?\n\r?\n/);
    if (end < 0) return;
    const block = buffer.text.slice(0, end);
    buffer.text = buffer.text.slice(end).replace(/^\r?\n\r?\n/, "");
    let event = "message";
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length > 0 || event !== "message") yield { event, data: data.join("\n") };
  }
}

function handle(queryClient: QueryClient, message: StreamMessage): void {
  for (const key of invalidates[message.event] ?? []) void queryClient.invalidateQueries({ queryKey: [key] });
  if (message.event !== "events") return;
  try {
    const parsed = JSON.parse(message.data) as { events?: EventView[] };
    if (parsed.events && parsed.events.length > 0) for (const listener of eventListeners) listener(parsed.events);
  } catch {
    // A data line this build cannot read still invalidated the events list above.
  }
}

/** Runs until the signal aborts; returns a stop function. */
export function startStream(queryClient: QueryClient): () => void {
  const abort = new AbortController();
  let wait = 500;
  const run = async () => {
    while (!abort.signal.aborted) {
      try {
        const response = await open(admin.stream(), { accept: "text/event-stream", signal: abort.signal });
        if (!response.body) throw new Error(`stream answered ${response.status} with no body`);
        setStatus("live");
        // Whatever changed while we were away: refetch everything shown.
        if (wait > 500) void queryClient.invalidateQueries();
        wait = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        const buffer = { text: "" };
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer.text += value;
          for (const message of readMessages(buffer)) handle(queryClient, message);
        }
      } catch {
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the page may have closed the stream during the wait
        if (abort.signal.aborted) return;
      }
      setStatus("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 5000);
    }
  };
  void run();
  return () => abort.abort();
}
