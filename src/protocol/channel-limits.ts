// How much one message may carry on the channel from a process that runs pack code to the host
// (frame-channel.ts reads it; a line past MAX_LINE is pack code writing there, and ends the
// process). The process's own code keeps what it sends within these, so that a large answer or
// file fails its own call, saying why, and not every call of the process with it.

/** The longest line the host reads from a process that runs pack code, in characters. */
export const MAX_LINE = 16 * 1024 * 1024

/**
 * The most values one line may hold outside its strings: objects, arrays, members, elements
 * (json-values.ts counts them). A line shorter than this cannot pass it, and is not counted.
 * The host's own messages hold about fifteen an item, and a pack process cuts its batches at
 * MAX_BATCH_ITEMS.
 */
export const MAX_VALUES = 32 * 1024

/** The most items one batch line of a pack process holds. */
export const MAX_BATCH_ITEMS = 1024

/**
 * The largest tool file that crosses a pack process's channel, stored or read: base64 makes it
 * a third larger. Past it, ctx.files.store throws, and a read answers an error, saying so.
 */
export const MAX_FILE_BYTES = 10 * 1024 * 1024

/**
 * The longest answer, as it crosses: its JSON as a JSON string (quotes and backslashes count
 * twice). The rest of a line is room for the message around it.
 */
export const MAX_ANSWER_CHARS = MAX_LINE - 64 * 1024
