import type { JobModule } from "@sluice/runtime";
import type { CollectStreamSink, StreamExecutionEnvironment } from "../index.js";

export declare const RECORDS: number;
export declare const KEYS: number;
export declare const environment: StreamExecutionEnvironment;
export declare const counts: CollectStreamSink<[number, number]>;
declare const job: JobModule;
export default job;
