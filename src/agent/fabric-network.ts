import net from "node:net";
import type { NetworkInterfaceInfo } from "node:os";
import { DomainError } from "../errors/light.js";
import { fabricNetworkSchema, type FabricNetwork } from "../protocol/for-agent.js";

/** The machine's interfaces as os.networkInterfaces() lists them. */
export type InterfaceTable = NodeJS.Dict<NetworkInterfaceInfo[]>;

/** An address as the kernel writes it, so "0:0::1" and "::1" are one address; a link-local zone ("%eth0") is kept as written. */
function canonical(address: string): string {
  const [bare = "", zone] = address.replace(/^\[(.*)\]$/, "$1").split("%", 2);
  if (!net.isIPv6(bare)) return address;
  const written = new URL(`http://[${bare}]`).hostname.slice(1, -1);
  return zone === undefined ? written : `${written}%${zone}`;
}

function listAddresses(interfaces: InterfaceTable): string {
  const lines = Object.entries(interfaces).flatMap(([name, infos]) => (infos ?? []).map((info) => `${name} ${info.address}`));
  return lines.length > 0 ? lines.join(", ") : "none";
}

/**
 * Where this node is reached on its fabric (--fabric-address) and the
 * interface that address is on, which the engines of a replica over several
 * nodes are told for NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME. The interface
 * is the one holding the address; --fabric-interface names it instead, for an
 * address the machine does not hold itself (one NAT forwards). An address no
 * interface holds, with no --fabric-interface, is refused at start: an engine
 * given it would wait at a rendezvous nobody can reach, and time out minutes
 * later far from the cause. Undefined when neither flag is given.
 */
export function resolveFabricNetwork(address: string | undefined, interfaceName: string | undefined, interfaces: InterfaceTable): FabricNetwork | undefined {
  if (address === undefined) {
    if (interfaceName === undefined) return undefined;
    throw new DomainError(
      "config_invalid",
      `--fabric-interface ${interfaceName} was given without --fabric-address`,
      "Give --fabric-address too: the IP address on that interface where the other nodes of the fabric reach this one.",
    );
  }
  const trimmed = address.trim();
  if (net.isIP(trimmed.replace(/^\[(.*)\]$/, "$1")) === 0) {
    throw new DomainError(
      "config_invalid",
      `--fabric-address "${address}" is not an IP address`,
      `Give this node's IP address on its fabric, one the other nodes of the fabric can reach; this machine has ${listAddresses(interfaces)}.`,
    );
  }
  const wanted = canonical(trimmed);
  let name = interfaceName;
  if (name === undefined) {
    name = Object.entries(interfaces).find(([, infos]) => (infos ?? []).some((info) => canonical(info.address) === wanted))?.[0];
    if (name === undefined) {
      throw new DomainError(
        "config_invalid",
        `--fabric-address ${wanted}: no network interface of this machine holds that address (it has ${listAddresses(interfaces)})`,
        "Give one of this machine's own addresses on the fabric, or, when the other nodes reach it at an address it does not hold (NAT), name the interface that traffic arrives on with --fabric-interface NAME.",
      );
    }
  } else if (!(name in interfaces)) {
    throw new DomainError(
      "config_invalid",
      `--fabric-interface ${name}: this machine has no network interface of that name with an address (it has ${Object.keys(interfaces).join(", ") || "none"})`,
      "Name the interface of the fabric as `ip -brief address` lists it, or leave --fabric-interface out to use the one holding --fabric-address.",
    );
  }
  const parsed = fabricNetworkSchema.safeParse({ address: wanted, interface: name });
  if (!parsed.success) {
    throw new DomainError("config_invalid", `--fabric-interface "${name}" is not a name the server accepts`, "Name the interface of the fabric as `ip -brief address` lists it.");
  }
  return parsed.data;
}
