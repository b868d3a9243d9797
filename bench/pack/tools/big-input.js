// Takes ~100 KiB of records and answers how many there were: the cost of moving a big input.
export default function bigInput(input) {
  return { count: input.records.length }
}
