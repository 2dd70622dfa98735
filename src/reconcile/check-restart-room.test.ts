import { describe, expect, it } from "vitest";
import { GiB, chat, intent, node, row } from "../../test/support/fleet-state.js";
import { refusalOf } from "../../test/support/refusal.js";
import { checkRestartRoom } from "./check-restart-room.js";
import { observe, type FleetState } from "./observe.js";

const nowMs = Date.parse("2026-03-01T10:05:00.000Z");
const card = (index: number) => ({ index, uuid: `GPU-${index}`, name: "H100", class: "h100", memory_bytes: 80 * GiB, memory_used_bytes: null, memory_foreign_bytes: null, fabric: "nvl0", replica: null });
const inPlace = "llmgw ctl restart --model chat --in-place";

/** chat's one managed replica on the only card of gpu-1, beside `spare` free cards. */
function fleet(spare: number): FleetState {
  return {
    models: [chat],
    statuses: [],
    nodes: [node("gpu-1", { gpus: Array.from({ length: 1 + spare }, (_, index) => card(index)) })],
    rows: [row("r-1", "gpu-1", "gpu")],
    intents: [intent("r-1")],
    canaries: [],
  };
}

describe("checkRestartRoom", () => {
  it("lets a restart by surge go ahead when a replacement fits beside the replica it replaces", () => {
    expect(() => checkRestartRoom(observe(fleet(1), nowMs), chat, undefined, inPlace)).not.toThrow();
  });

  it("refuses with no room beside it, naming the profile and the in-place way out", () => {
    const error = refusalOf(() => checkRestartRoom(observe(fleet(0), nowMs), chat, undefined, inPlace));
    expect(error.code).toBe("no_room");
    expect(error.message).toMatch(/^no room to start a replica of chat on its profile gpu beside the ones it replaces: /);
    expect(error.hint).toContain(`Run \`${inPlace}\``);
    expect(error.hint).toContain("A change never moves a replica to a worse profile to make room.");
  });

  it("asks nothing when no replica would be replaced", () => {
    const none: FleetState = { ...fleet(0), intents: [intent("r-1", { withdrawn_at: "2026-03-01T10:00:00.000Z" })] };
    expect(() => checkRestartRoom(observe(none, nowMs), chat, undefined, inPlace)).not.toThrow();
  });
});
