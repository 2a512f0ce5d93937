// Package spine is the work spine: runs, the steps taken in them and the
// observations made about them.
//
// A session's recording is one run (the session row's sessionRunId). Every
// completed action becomes one Step and one Observation; notes (a hole in
// the recording) and control messages are observations without a step. A
// run started for a planner step names it (ParentRunID, ParentStepID), so a
// trace goes from the plan's step down into everything the app did.
//
// Rows are written in bulk by projectors through a Batch and read back with
// Steps:
//
//	var b spine.Batch
//	b.AddRun(run)
//	b.AddStep(step, obs)
//	err := b.Flush(ctx, tx)
//	page, err := spine.Steps(ctx, pool, runID, since, 100)
package spine
