import { describeBattery } from "./battery-suite.js";

describeBattery("llama", 180_000);
