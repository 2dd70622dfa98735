import type { NetworkInterfaceInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { resolveAgentConfig } from "./agent-config.js";
import { resolveFabricNetwork, type InterfaceTable } from "./fabric-network.js";

function info(address: string): NetworkInterfaceInfo {
  const family = address.includes(":") ? "IPv6" : "IPv4";
  return family === "IPv4"
    ? { address, family, netmask: "255.255.255.0", mac: "00:00:00:00:00:00", internal: false, cidr: `${address}/24` }
    : { address, family, netmask: "ffff:ffff:ffff:ffff::", mac: "00:00:00:00:00:00", internal: false, cidr: `${address}/64`, scopeid: 0 };
}

const machine: InterfaceTable = {
  lo: [info("127.0.0.1"), info("::1")],
  eth0: [info("192.168.1.20")],
  ib0: [info("10.10.0.7"), info("fd00::7")],
};

describe("the node's address on its fabric", () => {
  it("finds the interface that holds the address", () => {
    expect(resolveFabricNetwork("10.10.0.7", undefined, machine)).toEqual({ address: "10.10.0.7", interface: "ib0" });
    expect(resolveFabricNetwork("127.0.0.1", undefined, machine)).toEqual({ address: "127.0.0.1", interface: "lo" });
    // An IPv6 address however it is written.
    expect(resolveFabricNetwork("fd00:0:0:0::7", undefined, machine)).toEqual({ address: "fd00::7", interface: "ib0" });
    expect(resolveFabricNetwork("[fd00::7]", undefined, machine)).toEqual({ address: "fd00::7", interface: "ib0" });
  });

  it("reports nothing when no address is given", () => {
    expect(resolveFabricNetwork(undefined, undefined, machine)).toBeUndefined();
  });

  it("refuses an address no interface holds, naming the flag, the way out and the machine's addresses", () => {
    expect(() => resolveFabricNetwork("10.10.0.99", undefined, machine)).toThrow(
      expect.objectContaining({
        code: "config_invalid",
        message: "--fabric-address 10.10.0.99: no network interface of this machine holds that address (it has lo 127.0.0.1, lo ::1, eth0 192.168.1.20, ib0 10.10.0.7, ib0 fd00::7)",
        hint: expect.stringContaining("--fabric-interface NAME"),
      }),
    );
  });

  it("takes --fabric-interface over the lookup, for an address the machine does not hold (NAT), if the interface exists", () => {
    expect(resolveFabricNetwork("203.0.113.5", "ib0", machine)).toEqual({ address: "203.0.113.5", interface: "ib0" });
    expect(resolveFabricNetwork("10.10.0.7", "eth0", machine)).toEqual({ address: "10.10.0.7", interface: "eth0" });
    expect(() => resolveFabricNetwork("203.0.113.5", "ib9", machine)).toThrow(/--fabric-interface ib9: this machine has no network interface of that name with an address \(it has lo, eth0, ib0\)/);
  });

  it("refuses what is not an IP address, and an interface without an address", () => {
    expect(() => resolveFabricNetwork("gpu-node-1", undefined, machine)).toThrow(/--fabric-address "gpu-node-1" is not an IP address/);
    expect(() => resolveFabricNetwork(undefined, "ib0", machine)).toThrow(/--fabric-interface ib0 was given without --fabric-address/);
  });

  it("is resolved with the agent's configuration, before anything starts", () => {
    expect(resolveAgentConfig({ server: "http://control:8080", fabricAddress: "10.10.0.7" }, {}, "node", machine).fabricNetwork).toEqual({ address: "10.10.0.7", interface: "ib0" });
    expect(resolveAgentConfig({ server: "http://control:8080" }, {}, "node", machine).fabricNetwork).toBeUndefined();
    expect(() => resolveAgentConfig({ server: "http://control:8080", fabricAddress: "10.9.9.9" }, {}, "node", machine)).toThrow(/--fabric-address 10\.9\.9\.9/);
  });
});
