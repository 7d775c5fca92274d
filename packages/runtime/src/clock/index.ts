export { type Clock, SystemClock } from "./clock.js";
