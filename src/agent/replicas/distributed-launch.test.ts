import { describe, expect, it } from "vitest";
import { vllmDriver } from "../../engines/drivers/vllm.js";
import { testLaunchInput } from "../../engines/drivers/test-launch-input.js";
import { distributedLaunch } from "./distributed-launch.js";

describe("distributedLaunch", () => {
  it("gives a one-node replica nothing distributed", () => {
    expect(distributedLaunch(undefined)).toEqual({});
  });

  it("hands a worker's rank, the leader's address, the port and the interface to its engine's command line", () => {
    const launch = vllmDriver.build(
      testLaunchInput({ cards: [0, 1, 2, 3, 4, 5, 6, 7], ...distributedLaunch({ nodes: 2, rank: 1, leader_address: "10.0.0.1", port: 29500, network_interface: "ib0" }) }),
    );
    expect(launch.argv.join(" ")).toContain("--nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --master-port 29500 --headless");
    expect(launch.env).toMatchObject({ NCCL_SOCKET_IFNAME: "ib0", GLOO_SOCKET_IFNAME: "ib0" });
  });
});
