// Takes an input of twenty typed fields (validated by the index's schema) and answers a digest.
export default function twentyFields(input) {
  return { fields: Object.keys(input).length, name: input.name }
}
