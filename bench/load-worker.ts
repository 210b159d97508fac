/** Worker thread entry: runs one load (load.ts) with workerData and posts the result. */
import { parentPort, workerData } from 'node:worker_threads';
import { runLoad, type LoadOptions, type LoadTarget } from './load.js';

const { target, options } = workerData as { target: LoadTarget; options: LoadOptions };
parentPort!.postMessage(await runLoad(target, options));
