export { MAX_DOORBELL_ENDPOINTS, ThreadDoorbell } from "./thread-doorbell.js";
