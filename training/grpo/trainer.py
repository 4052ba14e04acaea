"""``AgentGRPOTrainer``: TRL's ``GRPOTrainer`` with leave-one-out advantages and truncated negatives out of the loss.

A subclass, not a fork. TRL 1.16 computes advantages inline in ``_generate_and_score_completions``;
this class calls it, then replaces ``out["advantages"]`` by :func:`training.grpo.advantage.group_advantages`
over the gathered rewards (captured in ``_calculate_rewards``), drops samples from the loss through
``tool_mask`` (never ``completion_mask``, which is also the attention mask) and recomputes the DAPO
normaliser ``num_items_in_batch``. Dropped samples stay in their group's baseline. With ``dupo=True`` the groups
whose rewards are all equal are then replaced by copies of informative groups of the same batch
(:mod:`training.grpo.dupo`), counted as weights instead of computed again. Rows that cannot move the loss are left
out of each micro-batch's forward and backward pass (:mod:`training.grpo.compact`). Every choice is a switch
(:class:`~training.grpo.advantage.GRPOSwitches`, fields of :class:`~training.grpo.grpo_config.AgentGRPOConfig`), so
the ablation grid can flip it.

Two optional hooks serve the data-policy feedback loop (:mod:`training.loop`): ``task_pool`` (an object with
``row(slot) -> dict``) resolves each dataset row's ``slot`` to the task it holds *now*, so a curated set takes effect
at the next generation batch without rebuilding the dataloader; ``outcome_sink`` (a callable) receives one dict per
rollout (task id, step, reward, answered, turns, tool calls), the same rows on every process.

Metrics logged every step (``agent/...``, ``time/...``): reward mean/std, fraction of zero-variance groups, fraction
dropped, DUPO's dropped / duplicated groups, the share of loss tokens a compacted micro-batch kept, answer rate, tool
calls per episode by tool, tool error rate, tokens generated, and the time split between generation, tool calls and
training.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import torch
from trl import GRPOTrainer

from agents.turn import NO_ANSWER_METRICS
from sim_web.protocol.actions import TOOL_NAMES
from simweb_core.errors import ConfigError
from training.grpo.advantage import drop_mask, group_advantages, group_std, zero_variance_groups
from training.grpo.compact import ROW_SUM_LOSSES, compact_batch, live_rows
from training.grpo.correction import gap_stats, is_ratio
from training.grpo.dupo import dupo_weights
from training.grpo.grpo_config import AgentGRPOConfig
from training.grpo.head import supported, token_logps

log = logging.getLogger(__name__)


def _no_answer_from_ids(out: dict[str, Any], eos_ids: list[int]) -> torch.Tensor:
    """TRL's truncation test on the padded output (last real token is not an end token): the fallback flag."""
    ids, mask = out["completion_ids"], out["completion_mask"]
    last = ids.gather(1, (mask.sum(1) - 1).clamp(min=0).unsqueeze(1)).squeeze(1)
    return ~torch.isin(last, torch.tensor(eos_ids, device=ids.device))


class AgentGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with the switches of :class:`AgentGRPOConfig`.

    Takes ``GRPOTrainer``'s arguments. With :func:`training.grpo.rollout.make_rollout_func` as
    ``rollout_func`` the per-episode fields (``no_answer``, ``answered``, ``tool_calls``...) feed the drop
    rule and the metrics; with any other rollout, "no final answer" falls back to TRL's test (the
    completion does not end with an end-of-turn token).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.args, AgentGRPOConfig):
            raise ConfigError(
                "AgentGRPOTrainer needs args=AgentGRPOConfig(...) (it carries the advantage and truncation switches)"
            )
        self._rewards_per_func: torch.Tensor | None = None
        self._rollout_seconds = 0.0
        self._train_seconds = 0.0
        self.task_pool: Any = None  # training.loop: resolves a row's slot to its current task
        self.outcome_sink: Any = None  # training.loop: receives one outcome dict per rollout
        self._correct_rollouts = False  # this generation batch came from an engine other than the trainer's forward
        self._is_inputs: dict[str, Any] | None = None  # the micro-batch whose loss the correction applies to
        self._score_mask: torch.Tensor | None = None  # the positions the micro-batch's loss reads (training.grpo.head)

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> torch.Tensor:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rewards_per_func = rewards_per_func  # gathered across processes, groups contiguous
        return rewards_per_func

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        t0 = time.perf_counter()
        if self.task_pool is not None and self.model.training:
            inputs = [{**row, **self.task_pool.row(row["slot"])} if "slot" in row else row for row in inputs]
        out = super()._generate_and_score_completions(inputs)  # merges the rollout's extra fields into `inputs`
        self._correct_rollouts = bool(
            not self.use_vllm  # TRL corrects vLLM's rollouts itself
            and self.vllm_importance_sampling_correction
            and "sampling_per_token_logps" in out
            and inputs
            and inputs[0].get("rollout_exact") is False
        )
        mode = "train" if self.model.training else "eval"
        device = out["completion_mask"].device
        rewards = self.batch_rewards()
        group = self.num_generations if mode == "train" else self.num_generations_eval
        n = len(inputs)
        local = slice(self.accelerator.process_index * n, (self.accelerator.process_index + 1) * n)
        if self.args.advantage != "grpo":
            out["advantages"] = group_advantages(rewards.cpu(), group, self.args.advantage).to(device)[local]
        if "no_answer" in inputs[0]:
            no_answer = torch.tensor([bool(x["no_answer"]) for x in inputs], device=device)
        else:
            no_answer = _no_answer_from_ids(out, [*self.eos_token_ids, self._tokenizer.pad_token_id])
        dropped = drop_mask(rewards[local].to(device), no_answer, self.args.truncation)
        completion_mask = out["completion_mask"]
        tool_mask = out.get("tool_mask")
        tool_mask = torch.ones_like(completion_mask) if tool_mask is None else tool_mask
        out["tool_mask"] = tool_mask * (~dropped).unsqueeze(1).to(tool_mask.dtype)
        weight = torch.ones(n, device=device)
        if self.args.dupo and mode == "train":
            weight = self._dupo(rewards[local], group).to(device)
            out["advantages"] = out["advantages"] * (weight if out["advantages"].dim() == 1 else weight.unsqueeze(1))
            out["tool_mask"] = out["tool_mask"] * (weight > 0).unsqueeze(1).to(tool_mask.dtype)
        tokens = (out["completion_mask"] * out["tool_mask"]).sum(dim=1)
        out["num_items_in_batch"] = self.accelerator.gather((tokens * weight).sum()).sum()
        self._rollout_seconds += time.perf_counter() - t0
        self._log_agent_metrics(mode, inputs, rewards, group, no_answer, dropped)
        if self.outcome_sink is not None and mode == "train":
            self._record_outcomes(inputs, rewards[local])
        return out

    def batch_rewards(self) -> torch.Tensor:
        """The last generation batch's rewards, gathered from every process, groups contiguous: the weighted sum of
        the reward functions, NaN where every function was unscorable."""
        rpf = self._rewards_per_func
        assert rpf is not None, "_calculate_rewards did not run"
        rewards = (rpf * self.reward_weights.to(rpf.device).unsqueeze(0)).nansum(dim=1)
        rewards[torch.isnan(rpf).all(dim=1)] = torch.nan
        return rewards

    def dupo_seed(self, step: int) -> int:
        """The seed of DUPO's choice of copied groups for the generation batch of optimiser step ``step``."""
        return self.args.seed * 100_003 + step

    def _dupo(self, rewards: torch.Tensor, group: int) -> torch.Tensor:
        """DUPO's filled batch as weights on this process's samples (copies of informative groups in place of the
        zero-variance ones, counted instead of computed: :func:`~training.grpo.dupo.dupo_weights`); logs the counts."""
        n = rewards.numel()
        if n % group or (self.accelerator.process_index * n) % group:
            raise ConfigError(
                f"DUPO needs whole groups on each process: {n} samples per process, groups of {group} "
                "(make per_device_train_batch_size a multiple of num_generations)"
            )
        weight, stats = dupo_weights(rewards.cpu(), group, seed=self.dupo_seed(self.state.global_step))
        m = self._metrics["train"]
        totals = (
            self.accelerator.gather(
                torch.tensor([stats["groups"], stats["dropped"], stats["duplicated"]], device=self.accelerator.device)
            )
            .view(-1, 3)
            .sum(0)
            .tolist()
        )
        m["agent/dupo_groups"].append(float(totals[0]))
        m["agent/dupo_dropped_groups"].append(float(totals[1]))
        m["agent/dupo_duplicated_groups"].append(float(totals[2]))
        return weight

    def _record_outcomes(self, inputs: list[dict[str, Any]], rewards: torch.Tensor) -> None:
        """One outcome per rollout, gathered from every process and handed to ``outcome_sink`` on each (the loop's
        curation must see the same table everywhere; only the main process writes it)."""
        from accelerate.utils import gather_object

        step = self.state.global_step + 1  # the optimiser step these rollouts feed
        rows = [
            {
                "task_id": str(x.get("task_id", "")),
                "step": step,
                "reward": None if torch.isnan(r) else float(r),
                "answered": bool(x.get("answered", False)),
                "turns": int(x.get("turns", 0)),
                "tool_calls": int(sum((x.get("tool_calls") or {}).values())),
            }
            for x, r in zip(inputs, rewards.cpu())
        ]
        self.outcome_sink(gather_object(rows) if self.accelerator.num_processes > 1 else rows)

    def _gather_mean(self, values: list[float]) -> float:
        """Mean over every process's samples."""
        t = torch.tensor([sum(values), len(values)], dtype=torch.float64, device=self.accelerator.device)
        total, count = self.accelerator.gather(t).view(-1, 2).sum(0).tolist()
        return total / count if count else 0.0

    def _log_agent_metrics(
        self,
        mode: str,
        inputs: list[dict[str, Any]],
        rewards: torch.Tensor,
        group: int,
        no_answer: torch.Tensor,
        dropped: torch.Tensor,
    ) -> None:
        m = self._metrics[mode]
        ok = rewards[~torch.isnan(rewards)]
        m["agent/reward_mean"].append(ok.mean().item() if ok.numel() else float("nan"))
        m["agent/reward_std"].append(ok.std().item() if ok.numel() > 1 else 0.0)
        m["agent/frac_zero_variance_groups"].append(zero_variance_groups(rewards.cpu(), group).float().mean().item())
        m["agent/group_std_mean"].append(group_std(rewards.cpu(), group).mean().item())
        m["agent/frac_dropped"].append(self._gather_mean(dropped.float().tolist()))
        m["agent/frac_no_answer"].append(self._gather_mean(no_answer.float().tolist()))
        m["agent/frac_unscorable"].append(torch.isnan(rewards).float().mean().item())
        if "answered" not in inputs[0]:
            return
        m["agent/answer_rate"].append(self._gather_mean([float(x["answered"]) for x in inputs]))
        m["agent/turns"].append(self._gather_mean([float(x["turns"]) for x in inputs]))
        calls = [sum(x["tool_calls"].values()) for x in inputs]
        for tool in TOOL_NAMES:
            m[f"agent/tool_calls/{tool}"].append(
                self._gather_mean([float(x["tool_calls"].get(tool, 0)) for x in inputs])
            )
        per_episode = self._gather_mean([float(c) for c in calls])
        m["agent/tool_calls_per_episode"].append(per_episode)
        failed = self._gather_mean([float(x["tool_errors"]) for x in inputs])
        m["agent/tool_error_rate"].append(failed / per_episode if per_episode else 0.0)
        m["agent/action_errors_per_episode"].append(
            self._gather_mean([float(x.get("action_errors", 0)) for x in inputs])
        )
        m["agent/generated_tokens"].append(
            self._gather_mean([float(x["generated_tokens"]) for x in inputs])
            * len(inputs)
            * self.accelerator.num_processes
        )
        for name, reason in NO_ANSWER_METRICS.items():  # short metric names for the rollout's terminations
            m[f"agent/no_answer/{name}"].append(self._gather_mean([float(x["no_answer"] == reason) for x in inputs]))
        timing = inputs[0].get("rollout_timing") or {}
        for key in ("generation_seconds", "tool_seconds", "prefill_seconds", "decode_seconds"):
            if key in timing:
                m[f"time/{key.replace('_seconds', '')}"].append(float(timing[key]))

    def _rows_are_independent(self, model: Any) -> bool:
        """Whether a row with advantage 0 or no trained token adds nothing to the loss: training, with no KL, entropy
        or auxiliary term, on one process (DDP needs every rank's backward)."""
        if not model.training or self.beta != 0.0 or self.accelerator.num_processes != 1:
            return False
        return not (getattr(self, "_entropy_bonus_enabled", False) or getattr(self, "aux_loss_enabled", False))

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss on the rows that move it. A micro-batch with none (e.g. every group solved by every rollout) is
        skipped, forward and backward: its gradient is zero. Under a batch-normalised token loss (``dapo``,
        ``cispo``) the others are compacted to their live rows and used columns (:mod:`training.grpo.compact`),
        which leaves the loss unchanged and spends the passes only on what trains."""
        if not self._rows_are_independent(model):
            return self._scored_loss(model, inputs)
        live = live_rows(inputs)
        m = self._metrics["train"]
        m["agent/skipped_micro_batches"].append(float(not live.any()))
        if not live.any():
            return torch.zeros((), device=inputs["advantages"].device, requires_grad=True)
        small = compact_batch(inputs, live) if self.loss_type in ROW_SUM_LOSSES else None
        before = inputs["completion_ids"].numel()
        m["agent/loss_token_frac"].append(small["completion_ids"].numel() / before if small else 1.0)
        return self._scored_loss(model, small or inputs)

    def _scored_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """:meth:`_corrected_loss`, its logprobs scored only where the loss reads them when
        :meth:`_scores_own_positions` holds."""
        mask = inputs["completion_mask"]
        self._score_mask = mask * inputs["tool_mask"] if "tool_mask" in inputs else mask
        try:
            return self._corrected_loss(model, inputs)
        finally:
            self._score_mask = None

    def _scores_own_positions(self, model: Any, aux_loss: bool, extra: dict[str, Any]) -> bool:
        """Whether the loss's logprobs come from :func:`training.grpo.head.token_logps`: asked for, on a CPU, one
        process, a text model the head supports (no image inputs, no auxiliary loss)."""
        return (
            self.args.trained_positions_only
            and not aux_loss
            and self.accelerator.device.type == "cpu"
            and self.accelerator.num_processes == 1
            and not any(v is not None for v in extra.values())
            and supported(model)
        )

    def _corrected_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss; for a batch from another rollout engine, with each token's advantage multiplied by TRL's
        importance-sampling ratio (:func:`training.grpo.correction.is_ratio`), taken in
        :meth:`_get_per_token_logps_and_entropies` from the logprobs the loss itself computes."""
        if not (self._correct_rollouts and model.training and "sampling_per_token_logps" in inputs):
            return super()._compute_loss(model, inputs)
        advantages = inputs["advantages"]
        self._is_inputs = inputs
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._is_inputs = None
            inputs["advantages"] = advantages

    def _get_per_token_logps_and_entropies(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **extra: Any,
    ) -> Any:
        score, self._score_mask = self._score_mask, None
        if (
            score is not None
            and score.shape == (input_ids.shape[0], logits_to_keep)
            and self._scores_own_positions(model, compute_aux_loss, extra)
        ):
            with self.accelerator.autocast():
                out = (*token_logps(model, input_ids, attention_mask, score, self.temperature, compute_entropy), None)
        else:
            out = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss, **extra
            )
        inputs, self._is_inputs = self._is_inputs, None
        if inputs is not None:  # the loss's own pass over a micro-batch that needs the correction
            logps = out[0].detach()
            mask = inputs["completion_mask"] * inputs.get("tool_mask", torch.ones_like(inputs["completion_mask"]))
            sampled = inputs["sampling_per_token_logps"]
            ratio = is_ratio(
                logps,
                sampled,
                mask,
                self.vllm_importance_sampling_mode,
                self.vllm_importance_sampling_clip_min,
                self.vllm_importance_sampling_clip_max,
            )
            adv = inputs["advantages"]
            inputs["advantages"] = (adv.unsqueeze(1) if adv.dim() == 1 else adv) * ratio
            m = self._metrics["train"]
            gap = gap_stats(logps, sampled, mask)
            m["rollout/logprob_gap_abs_mean"].append(gap["abs_mean"])
            m["rollout/logprob_gap_abs_max"].append(gap["abs_max"])
            kept = ratio.expand_as(mask)[mask.bool()]
            m["rollout/is_ratio_mean"].append(kept.float().mean().item() if kept.numel() else 1.0)
        return out

    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any) -> torch.Tensor:
        """TRL's step, timed: what is not rollout (generation, tools, scoring) is training; logged once per optimiser step."""
        t0, before = time.perf_counter(), self._rollout_seconds
        loss = super().training_step(model, inputs, num_items_in_batch)  # generates on the first micro-step of a batch
        self._train_seconds += time.perf_counter() - t0 - (self._rollout_seconds - before)
        if self._step % self.current_gradient_accumulation_steps == 0:  # TRL counts micro-steps in _step
            self._metrics["train"]["time/training"].append(self._train_seconds)
            self._metrics["train"]["time/rollout"].append(self._rollout_seconds)
            self._train_seconds = self._rollout_seconds = 0.0
        return loss
