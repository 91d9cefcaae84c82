package hosttable

// The statements that set a commit's planner settings, for the plan tests of hosttable_test.
const SetTimeZone, JoinByHash = setTimeZone, joinByHash
