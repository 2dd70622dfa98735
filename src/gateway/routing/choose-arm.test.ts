import { describe, expect, it } from "vitest";
import { chooseArm, sameArmFirst, stickyKeyOf } from "./choose-arm.js";

describe("chooseArm", () => {
  it("sends everything to one arm at 0% and 100%", () => {
    expect(chooseArm(0, undefined, () => 0)).toBe("stable");
    expect(chooseArm(100, undefined, () => 0.999)).toBe("canary");
  });

  it("draws by weight without a sticky key", () => {
    expect(chooseArm(10, undefined, () => 0.0999)).toBe("canary");
    expect(chooseArm(10, undefined, () => 0.1)).toBe("stable");
  });

  it("gives one sticky key the same arm every time, whatever the random draw", () => {
    const key = stickyKeyOf("alice", undefined);
    const first = chooseArm(50, key, () => 0);
    for (const draw of [0.1, 0.5, 0.99]) expect(chooseArm(50, key, () => draw)).toBe(first);
  });

  it("puts about the weight's share of sticky keys on the canary", () => {
    const users = Array.from({ length: 10_000 }, (_, index) => `user-${index}`);
    const canary = users.filter((user) => chooseArm(10, stickyKeyOf(user, undefined), () => 0) === "canary").length;
    // Binomial(10000, 0.1): sd 30; 4 sd either side.
    expect(canary).toBeGreaterThan(1000 - 120);
    expect(canary).toBeLessThan(1000 + 120);
  });
});

describe("stickyKeyOf", () => {
  it("prefers the user field, then the x-session-id header", () => {
    expect(stickyKeyOf("bob", "s-1")).toBe("user:bob");
    expect(stickyKeyOf(undefined, "s-1")).toBe("session:s-1");
    expect(stickyKeyOf("", ["s-2", "s-3"])).toBe("session:s-2");
    expect(stickyKeyOf(42, undefined)).toBeUndefined();
  });
});

describe("sameArmFirst", () => {
  const stable = { id: "a", node: "n", endpoint: "http://127.0.0.1:1", state: "ready" as const };
  const canary = { ...stable, id: "b", arm: "canary" as const };
  it("keeps the chosen arm's replicas, or all when that arm has none", () => {
    expect(sameArmFirst([stable, canary], "canary")).toEqual([canary]);
    expect(sameArmFirst([stable, canary], "stable")).toEqual([stable]);
    expect(sameArmFirst([stable], "canary")).toEqual([stable]);
  });
});
