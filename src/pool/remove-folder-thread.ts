// The thread remove-folder.ts removes folders on, off its process's event loop.
import { parentPort } from 'node:worker_threads'
import { removeTree } from './remove-tree.js'

parentPort?.on('message', ({ id, folder }: { id: number; folder: string }) => parentPort?.postMessage({ id, removal: removeTree(folder) }))
