#!/usr/bin/env node
// The compiled entry point. `npm ci` runs `prepare`, which builds dist/.
import "../dist/src/cli/launch.js";
