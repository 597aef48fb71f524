// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_cubic_sce "cubic-sce": CUBIC (RFC 9438, HyStart) with the SCE response.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

#define EMU_HYSTART_MIN_SAMPLES 8
#define EMU_HYSTART_DELAY_MIN_US 4000U
#define EMU_HYSTART_DELAY_MAX_US 16000U

/* Its settings (emu_cc_params slots), the reference module's parameters
 * of the same names; parameters.rs gives their defaults. */
#define EMU_CUBIC_P_FAST_CONVERGENCE 0
#define EMU_CUBIC_P_BETA 1
#define EMU_CUBIC_P_INITIAL_SSTHRESH 2
#define EMU_CUBIC_P_BIC_SCALE 3
#define EMU_CUBIC_P_TCP_FRIENDLINESS 4
#define EMU_CUBIC_P_HYSTART 5
#define EMU_CUBIC_P_HYSTART_DETECT 6
#define EMU_CUBIC_P_HYSTART_LOW_WINDOW 7
#define EMU_CUBIC_P_HYSTART_ACK_DELTA 8	/* us */

/* emu_cubic_ca.options */
#define EMU_CUBIC_FAST_CONVERGENCE 0x1
#define EMU_CUBIC_FRIENDLY 0x2
#define EMU_CUBIC_HYSTART 0x4
#define EMU_CUBIC_HYSTART_TRAIN 0x8	/* hystart_detect bit 1 */
#define EMU_CUBIC_HYSTART_DELAY 0x10	/* hystart_detect bit 2 */

struct emu_cubic_ca {
	__s64 sce_cnt;		/* SCE window counter, bytes */
	__u64 last_esce;
	__u32 cnt;		/* ACKs per one-segment increase */
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 last_time;	/* us */
	__u32 origin;		/* W at the curve's origin */
	__u32 k;		/* 2^-10 s from the epoch to the origin */
	__u32 delay_min;	/* us */
	__u32 epoch_start;	/* us, 0: no epoch */
	__u32 ack_cnt;
	__u32 tcp_cwnd;		/* Reno-friendly estimate */
	__u32 round_start;	/* HyStart, us */
	__u32 end_seq;
	__u32 last_ack;		/* HyStart ACK train, us */
	__u32 curr_rtt;
	__u32 prior_snd_una;
	__u32 sqrt_cnt;
	__u32 recent_sce;
	__u32 sce_carry;	/* ESCE bytes short of a segment */
	__u32 last_ack_time;	/* us, for idle restarts */
	__u16 beta;		/* settings, read once in init */
	__u16 bic_scale;
	__u16 hystart_low_window;
	__u16 hystart_ack_delta;	/* us */
	__u8 sample_cnt;
	__u8 found;
	__u8 options;		/* EMU_CUBIC_* */
	__u8 pad;
};
_Static_assert(sizeof(struct emu_cubic_ca) <= 104, "icsk_ca_priv");

static __always_inline __u32 emu_now_us(const struct sock *sk)
{
	__u32 now = (__u32)tcp_sk(sk)->tcp_mstamp;

	return now ? now : 1;
}

static __always_inline void emu_cubic_reset(struct emu_cubic_ca *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->origin = 0;
	ca->k = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->found = 0;
	ca->sqrt_cnt = 1;
	ca->recent_sce = 0;
	ca->sce_cnt = 0;
	ca->sce_carry = 0;
}

static __always_inline void emu_hystart_reset(struct sock *sk, struct emu_cubic_ca *ca)
{
	ca->round_start = ca->last_ack = emu_now_us(sk);
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

/* The flow's settings, or the module's defaults without an entry. */
static __always_inline void emu_cubic_settings(struct sock *sk, struct emu_cubic_ca *ca)
{
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_CUBIC_SCE);
	__u32 detect = 3, initial_ssthresh = 0;

	ca->beta = EMU_CUBIC_BETA;
	ca->bic_scale = EMU_CUBIC_BIC_SCALE;
	ca->hystart_low_window = 16;
	ca->hystart_ack_delta = 2000;
	ca->options = EMU_CUBIC_FAST_CONVERGENCE | EMU_CUBIC_FRIENDLY | EMU_CUBIC_HYSTART;
	if (p) {
		ca->beta = (__u16)p->value[EMU_CUBIC_P_BETA];
		ca->bic_scale = (__u16)p->value[EMU_CUBIC_P_BIC_SCALE];
		ca->hystart_low_window = (__u16)p->value[EMU_CUBIC_P_HYSTART_LOW_WINDOW];
		ca->hystart_ack_delta = (__u16)p->value[EMU_CUBIC_P_HYSTART_ACK_DELTA];
		ca->options = (p->value[EMU_CUBIC_P_FAST_CONVERGENCE] ? EMU_CUBIC_FAST_CONVERGENCE : 0) |
			      (p->value[EMU_CUBIC_P_TCP_FRIENDLINESS] ? EMU_CUBIC_FRIENDLY : 0) |
			      (p->value[EMU_CUBIC_P_HYSTART] ? EMU_CUBIC_HYSTART : 0);
		detect = p->value[EMU_CUBIC_P_HYSTART_DETECT];
		initial_ssthresh = p->value[EMU_CUBIC_P_INITIAL_SSTHRESH];
	}
	if (detect & 1)
		ca->options |= EMU_CUBIC_HYSTART_TRAIN;
	if (detect & 2)
		ca->options |= EMU_CUBIC_HYSTART_DELAY;
	/* As the module: an initial threshold only where HyStart is off. */
	if (!(ca->options & EMU_CUBIC_HYSTART) && initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

SEC("struct_ops/emu_cubic_sce_init")
void BPF_PROG(emu_cubic_sce_init, struct sock *sk)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	emu_cubic_reset(ca);
	emu_cubic_settings(sk, ca);
	emu_hystart_reset(sk, ca);
	ca->prior_snd_una = tcp_sk(sk)->snd_una;
	ca->last_ack_time = emu_now_us(sk);
	ca->last_esce = emu_sce_flow_open(sk);
	emu_set_mark(sk, EMU_MARK_ESCE);
}

static __always_inline void emu_cubic_update(struct sock *sk, struct emu_cubic_ca *ca,
					     __u32 cwnd, __u32 acked)
{
	__u32 now = emu_now_us(sk);
	__u32 target, t, delta;

	ca->ack_cnt += acked;
	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= 1000000 / 32)
		return;
	/* The curve is evaluated at most once per millisecond. */
	if (!(ca->epoch_start && (__s32)(now - ca->last_time) < 1000)) {
		ca->last_cwnd = cwnd;
		ca->last_time = now;
		if (!ca->epoch_start) {
			ca->epoch_start = now;
			ca->ack_cnt = acked;
			ca->tcp_cwnd = cwnd;
			if (ca->last_max_cwnd <= cwnd) {
				ca->k = 0;
				ca->origin = cwnd;
			} else {
				ca->k = emu_cubic_k(ca->last_max_cwnd, cwnd, ca->bic_scale);
				ca->origin = ca->last_max_cwnd;
			}
		}
		/* Evaluate one RTT (delay_min) ahead, as RFC 9438 does. */
		t = (__u32)((((__u64)(now - ca->epoch_start) + ca->delay_min)
			     << EMU_CUBIC_HZ_SHIFT) / 1000000);
		target = emu_cubic_target(ca->origin, ca->k, t, ca->bic_scale);
		if (target > cwnd)
			ca->cnt = cwnd / (target - cwnd);
		else
			ca->cnt = 100 * cwnd;
		if (ca->last_max_cwnd == 0 && ca->cnt > 20)
			ca->cnt = 20;
	}
	/* Reno-friendly region. */
	if (ca->options & EMU_CUBIC_FRIENDLY) {
		delta = (cwnd * emu_cubic_friendly_scale(ca->beta)) >> 3;
		if (delta && ca->ack_cnt > delta) {
			__u32 n = (ca->ack_cnt - 1) / delta;

			ca->ack_cnt -= n * delta;
			ca->tcp_cwnd += n;
		}
		if (ca->tcp_cwnd > cwnd) {
			__u32 max_cnt = cwnd / (ca->tcp_cwnd - cwnd);

			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}
	ca->cnt = EMU_MAX(ca->cnt, 2U);
}

SEC("struct_ops/emu_cubic_sce_cong_avoid")
void BPF_PROG(emu_cubic_sce_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			goto out;
	}
	emu_cubic_update(sk, ca, tp->snd_cwnd, acked);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
out:
	ca->sqrt_cnt = emu_sce_sqrt_cwnd(tp->snd_cwnd);
}

SEC("struct_ops/emu_cubic_sce_ssthresh")
__u32 BPF_PROG(emu_cubic_sce_ssthresh, struct sock *sk)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;

	ca->epoch_start = 0;
	ca->last_max_cwnd = emu_cubic_last_max(cwnd, ca->last_max_cwnd, ca->beta,
					       ca->options & EMU_CUBIC_FAST_CONVERGENCE);
	return emu_cubic_ssthresh(cwnd, ca->beta, ca->recent_sce);
}

SEC("struct_ops/emu_cubic_sce_set_state")
void BPF_PROG(emu_cubic_sce_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		emu_cubic_reset(ca);
		emu_hystart_reset(sk, ca);
	}
}

SEC("struct_ops/emu_cubic_sce_cwnd_event")
void BPF_PROG(emu_cubic_sce_cwnd_event, struct sock *sk, int ev)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	emu_sce_echo(sk, ev);
	if (ev == CA_EVENT_TX_START) {
		__u32 now = emu_now_us(sk);
		__s32 idle = (__s32)(now - ca->last_ack_time);

		/* Idle for a while: shift the epoch so the curve resumes
		 * where it stopped. */
		if (ca->epoch_start && idle > 0) {
			ca->epoch_start += idle;
			if ((__s32)(ca->epoch_start - now) > 0)
				ca->epoch_start = now;
		}
	}
}

static __always_inline void emu_hystart_update(struct sock *sk, struct emu_cubic_ca *ca,
					       __u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = emu_now_us(sk);

	if ((__s32)(tp->snd_una - ca->end_seq) > 0)
		emu_hystart_reset(sk, ca);
	if (tp->snd_cwnd < ca->hystart_low_window)
		return;
	/* ACK train: the ACKs of one round keep arriving closely spaced for
	 * longer than half the minimum RTT. */
	if ((ca->options & EMU_CUBIC_HYSTART_TRAIN) &&
	    (__s32)(now - ca->last_ack) <= (__s32)ca->hystart_ack_delta) {
		__u32 threshold = ca->delay_min;
		__u64 rate = sk->sk_pacing_rate;

		ca->last_ack = now;
		if (rate)
			threshold += (__u32)EMU_MIN(1000ULL, (65536ULL * 4 * 1000000) / rate);
		if (sk->sk_pacing_status == SK_PACING_NONE)
			threshold >>= 1;
		if ((__s32)(now - ca->round_start) > (__s32)threshold) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
			return;
		}
	}
	/* Delay increase: the round's minimum RTT exceeds the path's by
	 * an eighth of it (clamped to 4..16 ms). */
	if (!(ca->options & EMU_CUBIC_HYSTART_DELAY))
		return;
	if (ca->curr_rtt > delay)
		ca->curr_rtt = delay;
	if (ca->sample_cnt < EMU_HYSTART_MIN_SAMPLES) {
		ca->sample_cnt++;
	} else {
		__u32 th = ca->delay_min >> 3;

		th = EMU_MIN(EMU_MAX(th, EMU_HYSTART_DELAY_MIN_US), EMU_HYSTART_DELAY_MAX_US);
		if (ca->curr_rtt > ca->delay_min + th) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
		}
	}
}

SEC("struct_ops/emu_cubic_sce_pkts_acked")
void BPF_PROG(emu_cubic_sce_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__s32 rtt = sample->rtt_us;
	__u32 delay;

	if (rtt < 0)
		return;
	/* Skip samples for a second after a reduction. */
	if (ca->epoch_start && (__s32)(emu_now_us(sk) - ca->epoch_start) < 1000000)
		return;
	delay = rtt ? (__u32)rtt : 1;
	if (!ca->delay_min || ca->delay_min > delay)
		ca->delay_min = delay;
	if ((ca->options & EMU_CUBIC_HYSTART) && !ca->found && emu_in_slow_start(tp))
		emu_hystart_update(sk, ca, delay);
}

SEC("struct_ops/emu_cubic_sce_in_ack_event")
void BPF_PROG(emu_cubic_sce_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u32 acked = tp->snd_una - ca->prior_snd_una;
	__u32 now = emu_now_us(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 sce, segs;

	if (!acked && !(flags & CA_ACK_WIN_UPDATE))
		acked = mss;
	if (!acked)
		return;
	ca->prior_snd_una = tp->snd_una;
	ca->last_ack_time = now;
	sce = emu_sce_bytes(sk, &ca->last_esce, acked);
	if (sce) {
		segs = (sce + ca->sce_carry) / mss;
		ca->sce_carry = (sce + ca->sce_carry) - segs * mss;
		if (!ca->epoch_start) {
			/* No curve yet (slow start): just leave slow start. */
			tp->snd_ssthresh = EMU_MAX(cwnd >> 1, 2U);
		} else {
			__u32 t = (__u32)(((__u64)(now - ca->epoch_start) << EMU_CUBIC_HZ_SHIFT) /
					  1000000);
			__s64 steps;

			if (segs) {
				__u32 k = ca->k, origin = ca->origin;
				__u32 adv = emu_cubic_sce_pull(t, &k, &origin, segs, ca->sqrt_cnt,
							       ca->bic_scale);

				ca->k = k;
				ca->origin = origin;
				ca->epoch_start += (__u32)(((__u64)adv * 1000000) >> EMU_CUBIC_HZ_SHIFT);
				if (!ca->epoch_start)
					ca->epoch_start = 1;
			}
			/* A whole window of SCE feedback costs sqrt(cwnd)
			 * segments, taken from the window and the origin. */
			ca->sce_cnt -= (__s64)sce * ca->sqrt_cnt;
			ca->recent_sce = cwnd + 1;
			steps = emu_window_steps(&ca->sce_cnt, (__u64)mss * cwnd);
			if (steps < 0) {
				__u32 n = (__u32)(-steps);

				cwnd = cwnd > n + 2 ? cwnd - n : 2;
				ca->origin = ca->origin > n ? ca->origin - n : 0;
				/* The Reno-friendly estimate loses the same,
				 * or it would soon drive the window back up. */
				ca->tcp_cwnd = ca->tcp_cwnd > n ? ca->tcp_cwnd - n : 0;
				tp->snd_cwnd = cwnd;
			}
			tp->snd_ssthresh = EMU_MAX(cwnd >> 1, 2U);
		}
	}
	ca->sqrt_cnt = emu_sce_sqrt_cwnd(cwnd);
	if (ca->recent_sce)
		ca->recent_sce--;
}

SEC("struct_ops/emu_cubic_sce_undo_cwnd")
__u32 BPF_PROG(emu_cubic_sce_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_cubic_sce = {
	.init = (void *)emu_cubic_sce_init,
	.ssthresh = (void *)emu_cubic_sce_ssthresh,
	.cong_avoid = (void *)emu_cubic_sce_cong_avoid,
	.set_state = (void *)emu_cubic_sce_set_state,
	.cwnd_event = (void *)emu_cubic_sce_cwnd_event,
	.pkts_acked = (void *)emu_cubic_sce_pkts_acked,
	.in_ack_event = (void *)emu_cubic_sce_in_ack_event,
	.undo_cwnd = (void *)emu_cubic_sce_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "cubic_sce",
};
