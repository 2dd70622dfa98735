import { Code, ScrollArea } from "@mantine/core";
import { useEffect, useRef, useState } from "react";
import { admin, open, ApiError } from "../api.ts";

/** A replica's engine log: the last lines, then new ones as the engine writes them (the logs route, followed). */
export function LogTail({ replica }: { replica: string }) {
  const [text, setText] = useState("");
  const viewport = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const abort = new AbortController();
    setText("");
    void (async () => {
      try {
        const response = await open(admin.replicaLogs(replica, { tail: 200, follow: true }), { signal: abort.signal }).catch((error: unknown) => {
          if (error instanceof ApiError) return error;
          throw error;
        });
        if (response instanceof ApiError || !response.body) {
          setText(`(no log: ${response.status})`);
          return;
        }
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          // Keep the last 64 KB: a long-running engine's log has no end.
          setText((previous) => (previous + value).slice(-65_536));
        }
      } catch {
        // The page moved on (aborted) or the replica stopped.
      }
    })();
    return () => abort.abort();
  }, [replica]);
  useEffect(() => {
    viewport.current?.scrollTo({ top: viewport.current.scrollHeight });
  }, [text]);
  return (
    <ScrollArea h={220} viewportRef={viewport} type="auto" aria-label={`log of ${replica}`}>
      <Code block data-testid="log-tail">
        {text || "(waiting for the log)"}
      </Code>
    </ScrollArea>
  );
}
