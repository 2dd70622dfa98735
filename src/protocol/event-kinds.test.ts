import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { eventKinds } from "./event-kinds.js";

const ctlDoc = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../docs/ctl.md");

/** The kinds docs/ctl.md lists for `ctl events --json`, in its order. */
function documentedKinds(): string[] {
  const text = readFileSync(ctlDoc, "utf8").replace(/\s+/g, " ");
  const list = /`ctl events --json`: .*?`kind` \(noun-verb, one of: (.*?)\)/.exec(text)?.[1];
  if (list === undefined) throw new Error("docs/ctl.md no longer lists the kinds of `ctl events --json` as `kind` (noun-verb, one of: ...)");
  return list.split(", ").map((item) => item.replace(/^`|`$/g, ""));
}

describe("the kinds of events", () => {
  it("are listed in docs/ctl.md exactly as the store takes them, each once", () => {
    expect(documentedKinds()).toEqual([...eventKinds]);
    expect(new Set(eventKinds).size).toBe(eventKinds.length);
  });

  it("are each a noun and a verb", () => {
    for (const kind of eventKinds) expect(kind).toMatch(/^(replica|model|node|canary)-[a-z]+(-[a-z]+)*$/);
  });
});
