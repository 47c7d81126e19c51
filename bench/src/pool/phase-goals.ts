import type { PoolPhaseResult } from './measure-pool-fleet.js'

const MOVES_GOAL = 1.2

/** Whether one phase met issue 18's goals: convergence in time, moves within 1.2x the minimum. */
export function phaseGoals(phase: PoolPhaseResult): { converged: boolean; moves: boolean } {
  return {
    converged: phase.convergedMs !== null && phase.convergedMs <= phase.goalMs,
    moves: phase.moves <= Math.ceil(phase.minimumMoves * MOVES_GOAL),
  }
}
