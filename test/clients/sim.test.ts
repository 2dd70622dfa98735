import { describeBattery } from "./battery-suite.js";

describeBattery("sim", 90_000);
