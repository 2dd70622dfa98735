import { readFileSync, unwatchFile, watchFile, type Stats } from "node:fs";
import path from "node:path";
import { createSecureContext, rootCertificates, type Server as TlsServer } from "node:tls";
import { Agent, type Dispatcher } from "undici";
import { DomainError } from "../errors/light.js";

/** A certificate and its key, read and checked, with the files and the settings that named them. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** How the operator named each file ("server.yaml: tls.cert", "--tls-cert"), for messages. */
  readonly certWhere: string;
  readonly keyWhere: string;
  readonly cert: Buffer;
  readonly key: Buffer;
}

function readNamedFile(file: string, where: string, fix: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (error as Error).message;
    throw new DomainError("config_invalid", `${where}: cannot read ${file}: ${reason}`, fix);
  }
}

/**
 * Reads a PEM certificate and key and checks that they make a usable pair
 * (each parses, the key is the certificate's), so a wrong file is a start
 * error naming the setting and the file, not a handshake failure a client
 * sees later.
 */
export function readTlsFiles(names: { certFile: string; keyFile: string; certWhere: string; keyWhere: string }): TlsFiles {
  const fix = "Give a PEM certificate (with its chain) and its PEM private key, readable by this process.";
  const cert = readNamedFile(names.certFile, names.certWhere, fix);
  const key = readNamedFile(names.keyFile, names.keyWhere, fix);
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    const message = (error as Error).message;
    const which = /key values mismatch/i.test(message)
      ? `the key in ${names.keyFile} (${names.keyWhere}) is not the key of the certificate in ${names.certFile} (${names.certWhere})`
      : /PEM|certificate|x509/i.test(message) && !/key/i.test(message)
        ? `${names.certWhere}: ${names.certFile} is not a PEM certificate (${message})`
        : `${names.keyWhere}: ${names.keyFile} is not a usable PEM private key for ${names.certFile} (${message})`;
    throw new DomainError("config_invalid", which, fix);
  }
  return { ...names, cert, key };
}

/** A PEM file of one or more CA certificates a client trusts besides the system's own. */
export function readCaFile(file: string, where: string): Buffer {
  const ca = readNamedFile(file, where, "Give the PEM certificate of the CA that signed the server's certificate.");
  try {
    createSecureContext({ ca });
  } catch (error) {
    throw new DomainError("config_invalid", `${where}: ${file} is not a PEM CA certificate (${(error as Error).message})`, "Give the PEM certificate of the CA that signed the server's certificate.");
  }
  return ca;
}

/**
 * Serves a renewed certificate without a restart: when either file changes,
 * both are read again and, if they still make a pair, the server's context
 * is swapped. Connections already open keep the certificate they began with;
 * new ones get the new one. A half-written renewal (key updated, certificate
 * not yet) is reported and the last good pair stays in force until the next
 * change completes it.
 *
 * Files are polled by stat, not fs.watch: renewal tools (certbot, cert-manager's
 * mounted secrets) replace the file by rename, which ends an inotify watch.
 */
export function watchTlsFiles(
  server: TlsServer,
  files: TlsFiles,
  report: { renewed(file: string): void; failed(message: string): void },
  intervalMs = 1000,
): { stop(): void } {
  let current = files;
  const check = (now: Stats, before: Stats): void => {
    if (now.mtimeMs === before.mtimeMs && now.size === before.size && now.ino === before.ino) return;
    let next: TlsFiles;
    try {
      next = readTlsFiles(current);
    } catch (error) {
      report.failed(`${(error as Error).message}; the certificate read before stays in force`);
      return;
    }
    if (next.cert.equals(current.cert) && next.key.equals(current.key)) return;
    server.setSecureContext({ cert: next.cert, key: next.key });
    current = next;
    report.renewed(next.certFile);
  };
  const options = { interval: intervalMs, persistent: false };
  watchFile(files.certFile, options, check);
  watchFile(files.keyFile, options, check);
  return {
    stop() {
      unwatchFile(files.certFile, check);
      unwatchFile(files.keyFile, check);
    },
  };
}

/**
 * The HTTP client every llmgw process uses to reach another over HTTPS: it
 * verifies the certificate against the system's CAs and, when given, a
 * private CA. There is deliberately no way to turn verification off.
 */
export function verifyingDispatcher(ca: Buffer | undefined): Dispatcher | undefined {
  if (ca === undefined) return undefined;
  return new Agent({ connect: { ca: [...rootCertificates, ca.toString("utf8")] } });
}

/** The CA file given by a flag or, failing that, LLMGW_CA. */
export function caFromOption(flag: string | undefined, environment: Readonly<Record<string, string | undefined>> = process.env): Buffer | undefined {
  if (flag !== undefined) return readCaFile(flag, "--ca");
  const fromEnvironment = environment.LLMGW_CA;
  return fromEnvironment ? readCaFile(fromEnvironment, "LLMGW_CA") : undefined;
}

const certificateErrorCodes = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_SIGNATURE_FAILURE",
  "CERT_UNTRUSTED",
]);

/**
 * What a failed TLS verification means for the person at the terminal, or
 * undefined when the error is not one: which check failed, and the fix.
 */
export function certificateFailure(error: unknown): { reason: string; hint: string } | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause !== undefined && cause !== null; depth += 1) {
    const code = (cause as { code?: string }).code;
    if (code !== undefined && certificateErrorCodes.has(code)) {
      const reason =
        code === "ERR_TLS_CERT_ALTNAME_INVALID"
          ? `its certificate does not name this host (${(cause as Error).message})`
          : code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID"
            ? `its certificate is outside its validity dates (${code})`
            : `its certificate is not signed by a CA this process trusts (${code})`;
      const hint =
        code === "ERR_TLS_CERT_ALTNAME_INVALID"
          ? "Use the host name the certificate was made for, or renew the certificate with this name among its subject alternative names."
          : code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID"
            ? "Renew the server's certificate (the server picks up the new files without a restart), or check this machine's clock."
            : "Give the CA that signed the server's certificate with --ca FILE (or LLMGW_CA=FILE); verification cannot be turned off.";
      return { reason, hint };
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `--tls-cert` and `--tls-key`, both or neither. */
export function tlsFromFlags(certFile: string | undefined, keyFile: string | undefined): TlsFiles | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new DomainError(
      "config_invalid",
      `${certFile === undefined ? "--tls-key" : "--tls-cert"} was given without ${certFile === undefined ? "--tls-cert" : "--tls-key"}`,
      "Serve HTTPS with both --tls-cert FILE and --tls-key FILE, or give neither for plain HTTP.",
    );
  }
  return readTlsFiles({ certFile: path.resolve(certFile), keyFile: path.resolve(keyFile), certWhere: "--tls-cert", keyWhere: "--tls-key" });
}
