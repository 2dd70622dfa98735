import { describe, expect, it } from "vitest";
import { gangPlace, gangStanding, isFollowerId, memberId, type MemberStanding } from "./gang-members.js";

type State = "fetching" | "starting" | "ready" | "draining" | "stopped" | "failed" | "lost" | "pending";
const member = (rank: number, state: State, reason: string | null = null): MemberStanding<State> => ({ rank, node: `gpu-node-${rank + 3}`, state, reason });

describe("a replica over several nodes", () => {
  it("names its members after the replica: the leader by the replica's own id, the others with their rank", () => {
    expect([0, 1, 2].map((rank) => memberId("dsv3-ab12cd", rank))).toEqual(["dsv3-ab12cd", "dsv3-ab12cd.rank1", "dsv3-ab12cd.rank2"]);
    expect(isFollowerId("dsv3-ab12cd.rank1")).toBe(true);
    expect(isFollowerId("dsv3-ab12cd")).toBe(false);
    expect(isFollowerId("model.rank0")).toBe(false);
  });

  it("reads a row's gang from its spec, and none from a one-node spec", () => {
    const distributed = { nodes: 2, rank: 1, leader_address: "10.0.0.3", port: 29500, replica: "dsv3-ab12cd" };
    expect(gangPlace("dsv3-ab12cd.rank1", { distributed })).toEqual({ replica: "dsv3-ab12cd", rank: 1, nodes: 2 });
    // A spec without the replica id names it by the row's id.
    expect(gangPlace("dsv3-ab12cd.rank1", { distributed: { ...distributed, replica: undefined } })?.replica).toBe("dsv3-ab12cd");
    expect(gangPlace("chat-1", {})).toBeUndefined();
    expect(gangPlace("chat-1", null)).toBeUndefined();
  });

  it("is ready only when every member is, and otherwise as far as its slowest member", () => {
    expect(gangStanding([member(0, "ready"), member(1, "ready")], 2)).toEqual({ state: "ready", reason: null });
    expect(gangStanding([member(0, "ready"), member(1, "starting")], 2).state).toBe("starting");
    expect(gangStanding([member(0, "fetching", "fetching 40%"), member(1, "ready")], 2)).toEqual({ state: "fetching", reason: "fetching 40%" });
  });

  it("fails whole when one member fails, or stops under a live leader, naming the member", () => {
    expect(gangStanding([member(0, "ready"), member(1, "failed", "killed by SIGKILL")], 2)).toEqual({ state: "failed", reason: "member rank 1 on gpu-node-4 failed: killed by SIGKILL" });
    expect(gangStanding([member(0, "ready"), member(1, "stopped")], 2)).toEqual({ state: "failed", reason: "member rank 1 on gpu-node-4 stopped, and the replica cannot serve without it" });
  });

  it("ends with its leader: a leader stopped in order stops the replica, whatever its workers did after", () => {
    expect(gangStanding([member(0, "stopped"), member(1, "failed", "exited")], 2).state).toBe("stopped");
    expect(gangStanding([member(0, "draining"), member(1, "ready")], 2).state).toBe("draining");
  });

  it("is lost with a member's node, and failed when a rank was never recorded unless its start is still pending", () => {
    expect(gangStanding([member(0, "ready"), member(1, "lost", "node gpu-node-4 is lost")], 2)).toEqual({ state: "lost", reason: "node gpu-node-4 is lost" });
    expect(gangStanding([member(0, "pending")], 2).state).toBe("pending");
    expect(gangStanding([member(0, "ready")], 2)).toEqual({ state: "failed", reason: "rank 1 of 2 never started (the server stopped while starting the replica)" });
    expect(gangStanding([member(1, "ready")], 2)).toEqual({ state: "failed", reason: "its leader (rank 0) has no record" });
  });
});
