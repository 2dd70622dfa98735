import { describe, expect, it } from "vitest";
import { ListCache } from "./list-answer.js";

describe("ListCache", () => {
  it("keeps one answer per slot: a new key replaces it, and the key before is built again if asked for", async () => {
    const builds: string[] = [];
    const cache = new ListCache<string>();
    const get = (slot: string, key: string) =>
      cache.get(slot, key, async () => {
        builds.push(`${slot}:${key}`);
        return { value: `${key} for ${slot}` };
      });
    expect(await get("admin", "r1")).toBe("r1 for admin");
    expect(await get("admin", "r1")).toBe("r1 for admin");
    expect(await get("read", "r1")).toBe("r1 for read");
    expect(await get("admin", "r2")).toBe("r2 for admin");
    // r1 was replaced in the admin slot, not in the read slot.
    expect(await get("admin", "r1")).toBe("r1 for admin");
    expect(await get("read", "r1")).toBe("r1 for read");
    expect(builds).toEqual(["admin:r1", "read:r1", "admin:r2", "admin:r1"]);
  });

  it("shares one build among the readers of a key, and keeps no failed build", async () => {
    let builds = 0;
    let fail = true;
    const cache = new ListCache<number>();
    const build = async () => {
      builds += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (fail) throw new Error("the store went away");
      return { value: builds };
    };
    const both = await Promise.allSettled([cache.get("admin", "r1", build), cache.get("admin", "r1", build)]);
    expect(both.map((outcome) => outcome.status)).toEqual(["rejected", "rejected"]);
    expect(builds).toBe(1);
    fail = false;
    expect(await Promise.all([cache.get("admin", "r1", build), cache.get("admin", "r1", build)])).toEqual([2, 2]);
    expect(builds).toBe(2);
  });

  it("does not let a slow build of an older key displace the newer answer", async () => {
    const cache = new ListCache<string>();
    let finishOld: (() => void) | undefined;
    const old = cache.get("admin", "r1", () => new Promise((resolve) => (finishOld = () => resolve({ value: "old" }))));
    expect(await cache.get("admin", "r2", async () => ({ value: "new" }))).toBe("new");
    finishOld?.();
    expect(await old).toBe("old");
    let rebuilt = false;
    expect(await cache.get("admin", "r2", async () => ((rebuilt = true), { value: "again" }))).toBe("new");
    expect(rebuilt).toBe(false);
  });

  it("builds again once an answer's own deadline has passed, with the same key", async () => {
    let now = 1_000;
    const cache = new ListCache<number>(() => now);
    let builds = 0;
    const build = async () => ({ value: (builds += 1), validUntilMs: 2_000 });
    expect(await cache.get("admin", "r1", build)).toBe(1);
    now = 1_999;
    expect(await cache.get("admin", "r1", build)).toBe(1);
    now = 2_000;
    expect(await cache.get("admin", "r1", build)).toBe(2);
  });
});
