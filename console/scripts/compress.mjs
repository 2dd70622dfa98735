// Writes .gz and .br beside every text file of the built console, so the
// server sends a precompressed file instead of compressing on each request.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const root = path.resolve(import.meta.dirname, "../../dist/console");
const compressible = /\.(js|css|html|svg|json|txt|map)$/;

function walk(folder) {
  for (const name of readdirSync(folder)) {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) walk(file);
    else if (compressible.test(name)) {
      const body = readFileSync(file);
      writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
      writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    }
  }
}
walk(root);
