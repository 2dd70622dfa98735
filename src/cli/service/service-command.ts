import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { DomainError } from "../../errors/light.js";
import { llmgwCommand } from "../../package-root.js";
import { print } from "../output.js";
import { wholeNumber } from "../parse-option.js";
import { environmentVariables, renderUnit, serviceFaces, unitName, type ServiceFace, type UnitSpec } from "./unit-file.js";

export const systemUnitDirectory = "/etc/systemd/system";

interface InstallOptions {
  readonly user: string;
  readonly environmentFile?: string;
  readonly dataDir?: string;
  readonly unitDir?: string;
  readonly print?: boolean;
  readonly createUser?: boolean;
  readonly openFiles: number;
}

/** Options that carry a secret: in a unit's ExecStart= every local user reads them in `ps` and `systemctl show`. */
const secretOptions: Readonly<Record<string, string>> = {
  "--token": "LLMGW_JOIN_TOKEN (agent) or LLMGW_TOKEN (gateway)",
  "--database": "LLMGW_DATABASE",
};

function refuse(message: string, hint: string): never {
  throw new DomainError("config_invalid", message, hint);
}

export function checkFace(face: string): ServiceFace {
  if ((serviceFaces as readonly string[]).includes(face)) return face as ServiceFace;
  return refuse(`llmgw service install: "${face}" is not a service llmgw runs`, `Give one of ${serviceFaces.join(", ")}: llmgw service install agent`);
}

export function checkExtraArguments(face: ServiceFace, extra: readonly string[]): void {
  for (const word of extra) {
    const option = word.split("=")[0] ?? word;
    const variable = secretOptions[option];
    if (variable !== undefined) {
      refuse(`llmgw service install ${face}: ${option} would put a secret on the unit's command line, which every local user can read`, `Put it in the environment file instead (${variable}=...), readable by root only.`);
    }
    if (option === "--data-dir" || option === "--usage-journal") refuse(`llmgw service install ${face}: give the data directory with --data-dir before --, not among the face's arguments`, `llmgw service install ${face} --data-dir /var/lib/llmgw-${face}`);
  }
}

function userExists(user: string): boolean {
  try {
    execFileSync("id", ["-u", user], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function createSystemUser(user: string): void {
  // A system account with no login shell and no home of its own: the unit gives it HOME=its data directory.
  execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", user], { stdio: "inherit" });
}

export function buildUnitSpec(face: ServiceFace, options: InstallOptions, extra: readonly string[]): UnitSpec {
  const envFile = path.resolve(options.environmentFile ?? `/etc/llmgw/${face}.env`);
  const dataDir = path.resolve(options.dataDir ?? `/var/lib/llmgw-${face}`);
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(options.user)) refuse(`llmgw service install: --user "${options.user}" is not a user name systemd accepts`, "Give a lower-case name such as llmgw.");
  const [node, llmgw] = llmgwCommand() as [string, string];
  return { face, user: options.user, envFile, dataDir, node, llmgw, extraArguments: extra, openFiles: options.openFiles };
}

/** Refusals that only matter when the file is written, in the order a person fixes them. */
function checkBeforeWriting(spec: UnitSpec, options: InstallOptions, unitDir: string): void {
  const writingSystemUnits = options.unitDir === undefined;
  if (writingSystemUnits && typeof process.getuid === "function" && process.getuid() !== 0) {
    refuse(`llmgw service install ${spec.face}: writing to ${unitDir} needs root`, `Run it with sudo, or print the unit with --print (or write it elsewhere with --unit-dir DIR).`);
  }
  if (!existsSync(spec.envFile)) {
    refuse(
      `llmgw service install ${spec.face}: the environment file ${spec.envFile} does not exist`,
      `Create it (readable by root only: install -m 0600 /dev/null ${spec.envFile}) with\n${environmentVariables[spec.face].map((line) => `  ${line}`).join("\n")}\nor name another with --environment-file FILE.`,
    );
  }
  if ((statSync(spec.envFile).mode & 0o004) !== 0) {
    refuse(`llmgw service install ${spec.face}: ${spec.envFile} is readable by every user, and it holds the service's secrets`, `chmod 0600 ${spec.envFile}`);
  }
  if (!userExists(spec.user)) {
    if (!options.createUser) refuse(`llmgw service install ${spec.face}: the user ${spec.user} does not exist`, `Add --create-user to make it (useradd --system ${spec.user}), or give an existing one with --user.`);
    createSystemUser(spec.user);
  }
}

export function registerServiceCommands(program: Command): void {
  const service = program.command("service").description("run llmgw under systemd: write the unit of a server, an agent or a gateway");
  service
    .command("install")
    .description("write a systemd unit for one face of llmgw (server, agent or gateway); arguments after -- go to the face (e.g. -- --listen 0.0.0.0:8080)")
    .argument("<face>", `which service: ${serviceFaces.join(", ")}`)
    .argument("[face-arguments...]", "more arguments for the face, after --; never a secret (those go in the environment file)")
    .option("--user <user>", "the system user the service runs as", "llmgw")
    .option("--create-user", "create --user as a system user (no login, no home) when it does not exist")
    // Not --env-file: Node 20 reads an --env-file anywhere on its command line, after the script's name too, and fails on it.
    .option("--environment-file <file>", "environment file with the service's secrets (default /etc/llmgw/FACE.env)")
    .option("--data-dir <dir>", "the service's state: under /var/lib systemd makes it (mode 0700); elsewhere it is made before each start (default /var/lib/llmgw-FACE)")
    .option("--open-files <n>", "the service's limit on open files (LimitNOFILE)", wholeNumber(1024), 65536)
    .option("--unit-dir <dir>", `where to write the unit (default ${systemUnitDirectory}, which needs root)`)
    .option("--print", "print the unit instead of writing it")
    .action((faceName: string, extra: string[], options: InstallOptions) => {
      const face = checkFace(faceName);
      checkExtraArguments(face, extra);
      const spec = buildUnitSpec(face, options, extra);
      const text = renderUnit(spec);
      if (options.print) return print(text.trimEnd());
      const unitDir = path.resolve(options.unitDir ?? systemUnitDirectory);
      checkBeforeWriting(spec, options, unitDir);
      mkdirSync(unitDir, { recursive: true });
      const file = path.join(unitDir, unitName(face));
      writeFileSync(file, text, { mode: 0o644 });
      print(
        [
          `Wrote ${file}.`,
          `  Start it:  systemctl daemon-reload && systemctl enable --now ${unitName(face)}`,
          `  Its logs:  journalctl -u ${unitName(face)} -f   (JSON lines; add -o cat to read them bare)`,
        ].join("\n"),
      );
    });
}
