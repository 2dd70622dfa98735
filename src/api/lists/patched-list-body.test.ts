import { describe, expect, it } from "vitest";
import { PatchedListBody, type SplitItem } from "./patched-list-body.js";

/** A node's JSON in two parts around its last_seen_at, as the nodes route keeps it. */
const node = (name: string): SplitItem => ({ head: Buffer.from(`{"name":${JSON.stringify(name)},"last_seen_at":`), tail: Buffer.from(`,"state":"ready"}`) });
const items = [node("a"), node("b"), node("c")];
const at = (second: number) => JSON.stringify(new Date(Date.UTC(2026, 11, 4, 10, 0, second)).toISOString());
const seen = (body: Buffer) => (JSON.parse(body.toString("utf8")) as { nodes: { name: string; last_seen_at: string | null }[] }).nodes.map((entry) => entry.last_seen_at);

describe("a whole list's answer patched in place", () => {
  it("answers the items with the values of each read, in the same buffer while no reply is sending it", () => {
    const kept = new PatchedListBody("nodes", items, [at(1), at(2), at(3)]);
    expect(JSON.parse(kept.body.toString("utf8"))).toEqual({
      nodes: [
        { name: "a", last_seen_at: "2026-12-04T10:00:01.000Z", state: "ready" },
        { name: "b", last_seen_at: "2026-12-04T10:00:02.000Z", state: "ready" },
        { name: "c", last_seen_at: "2026-12-04T10:00:03.000Z", state: "ready" },
      ],
    });
    const first = kept.body;
    const patched = kept.patched([at(1), at(7), at(9)]);
    expect(patched).toBe(first);
    expect(seen(patched as Buffer)).toEqual(["2026-12-04T10:00:01.000Z", "2026-12-04T10:00:07.000Z", "2026-12-04T10:00:09.000Z"]);
  });

  it("never writes to a buffer a reply is still sending: the patch goes to a copy, and the reply's bytes stay as they were", () => {
    const kept = new PatchedListBody("nodes", items, [at(1), at(2), at(3)]);
    const inFlight = kept.body;
    const done = kept.sending();
    const next = kept.patched([at(4), at(2), at(3)]) as Buffer;
    expect(next).not.toBe(inFlight);
    expect(seen(inFlight)).toEqual(["2026-12-04T10:00:01.000Z", "2026-12-04T10:00:02.000Z", "2026-12-04T10:00:03.000Z"]);
    expect(seen(next)[0]).toBe("2026-12-04T10:00:04.000Z");
    // The old reply finishing says nothing of the copy, which another reply now sends.
    const copySent = kept.sending();
    done();
    expect(kept.patched([at(5), at(2), at(3)])).not.toBe(next);
    expect(seen(next)[0]).toBe("2026-12-04T10:00:04.000Z");
    copySent();
    // With no reply sending, the buffer is patched in place again.
    const current = kept.body;
    expect(kept.patched([at(6), at(2), at(3)])).toBe(current);
  });

  it("counts a reply once though it both finishes and closes", () => {
    const kept = new PatchedListBody("nodes", items, [at(1), at(2), at(3)]);
    const first = kept.sending();
    kept.sending();
    // "finish", then "close": the second reply is still sending, so the patch must go to a copy.
    first();
    first();
    const sent = kept.body;
    expect(kept.patched([at(4), at(2), at(3)])).not.toBe(sent);
    expect(seen(sent)[0]).toBe("2026-12-04T10:00:01.000Z");
  });

  it("cannot patch a value of another length or another number of items: the caller builds anew", () => {
    const kept = new PatchedListBody("nodes", items, [at(1), at(2), at(3)]);
    expect(kept.patched([at(1), "null", at(3)])).toBeUndefined();
    expect(kept.patched([at(1), at(2)])).toBeUndefined();
    // A value of the same length in characters but not in bytes is refused too.
    expect(kept.patched([at(1), at(2), JSON.stringify("é".repeat(24))])).toBeUndefined();
    expect(seen(kept.body)).toEqual(["2026-12-04T10:00:01.000Z", "2026-12-04T10:00:02.000Z", "2026-12-04T10:00:03.000Z"]);
  });
});
