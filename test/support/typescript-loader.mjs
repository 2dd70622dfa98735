// Runs the TypeScript sources in a real child process without a build step:
//   node --import ./test/support/typescript-loader.mjs src/whatever.ts
// End-to-end tests start agents and servers as real processes (so kill -9
// means what it says), and Node 20 cannot strip types by itself.
import { register } from "node:module";

register(new URL("./typescript-hooks.mjs", import.meta.url));
