import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/** A CA made for one test: its certificate and key files. */
export interface TestCa {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: Buffer;
}

function openssl(args: readonly string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** A private CA, as an operator makes one for a cluster, in `directory` under `name`. */
export function makeCa(directory: string, name: string): TestCa {
  const keyFile = path.join(directory, `${name}.key`);
  const certFile = path.join(directory, `${name}.crt`);
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", `/CN=${name}`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory);
  return { certFile, keyFile, cert: readFileSync(certFile) };
}

/**
 * A server certificate for 127.0.0.1 and localhost signed by `ca`, written to
 * `name`.crt and `name`.key (overwritten in place when they exist, as a renewal does).
 */
export function makeServerCertificate(directory: string, ca: TestCa, name: string, commonName = name): { certFile: string; keyFile: string } {
  const keyFile = path.join(directory, `${name}.key`);
  const certFile = path.join(directory, `${name}.crt`);
  const requestFile = path.join(directory, `${name}.csr`);
  const extensionsFile = path.join(directory, `${name}.ext`);
  writeFileSync(extensionsFile, "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  // Written beside the final names and moved in whole: a renewal tool replaces files, the server must never read half of one.
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${keyFile}.new`, "-out", requestFile, "-subj", `/CN=${commonName}`], directory);
  openssl(["x509", "-req", "-in", requestFile, "-CA", ca.certFile, "-CAkey", ca.keyFile, "-CAcreateserial", "-out", `${certFile}.new`, "-days", "1", "-extfile", extensionsFile], directory);
  execFileSync("mv", [`${keyFile}.new`, keyFile]);
  execFileSync("mv", [`${certFile}.new`, certFile]);
  return { certFile, keyFile };
}
