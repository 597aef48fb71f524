/* The SCE window counter that Reno-SCE and DCTCP-SCE share. Included by
 * endpoints.bpf.c after the shared pieces it uses. */

/* Both references move the window after slow start through a byte counter
 * worth unit * cwnd per segment (emu_sce_unit: the received segments'
 * size, as the references, or the sending MSS): unmarked acknowledged
 * bytes add to it, bytes acknowledged with SCE feedback take off what each reference's
 * response says, and each whole segment's worth moves the window by one.
 * Cost: a map lookup (the flow's ESCE count) and a few divisions per ACK. */
struct emu_sce_window {
	__s64 cnt;		/* bytes; unit * cwnd per segment */
	__u64 last_esce;	/* the flow's ESCE byte count at the last ACK */
	__u32 prior_snd_una;
	__u32 loss_cwnd;
	__u32 recent_sce;	/* ACKs left in which SCE counts as recent */
	__u32 sending_mss;	/* 1: the counter's unit is mss_cache, not rcv_mss */
};

/* The SCE senders' settings (emu_cc_params slots). */
#define EMU_SCE_P_UNIT 0	/* 0: icsk_ack.rcv_mss, as the references; 1: mss_cache */

/* The counter's byte unit now (rcv_mss moves as data arrives). */
static __always_inline __u32 emu_sce_window_unit(struct sock *sk, const struct emu_sce_window *w)
{
	return emu_sce_unit(inet_csk(sk)->icsk_ack.rcv_mss, tcp_sk(sk)->mss_cache, w->sending_mss);
}

/* Starts the counter, with the flow's settings of congestion control `cc`
 * (EMU_CC_*). */
static __always_inline void emu_sce_window_init(struct sock *sk, struct emu_sce_window *w, __u16 cc)
{
	const struct emu_cc_params *p = emu_cc_params_of(sk, cc);

	w->sending_mss = p && p->value[EMU_SCE_P_UNIT];
	w->prior_snd_una = tcp_sk(sk)->snd_una;
	w->cnt = 0;
	w->loss_cwnd = 0;
	w->recent_sce = 0;
	w->last_esce = emu_sce_flow_open(sk);
	emu_set_mark(sk, EMU_MARK_ESCE);
}

/* The bytes this ACK acknowledged (a duplicate ACK counts as one unit, a
 * window update as none), and in *sce those of them acknowledged with ESCE. */
static __always_inline __u32 emu_sce_window_acked(struct sock *sk, struct emu_sce_window *w,
						  __u32 flags, __u32 *sce)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 acked = emu_sce_acked_bytes(tp->snd_una - w->prior_snd_una,
					  (flags & CA_ACK_WIN_UPDATE) != 0, emu_sce_window_unit(sk, w));

	*sce = 0;
	if (!acked)
		return 0;
	w->prior_snd_una = tp->snd_una;
	*sce = emu_sce_bytes(sk, &w->last_esce, acked);
	return acked;
}

/* Unmarked bytes grow the counter after slow start, while the window is
 * the limit. */
static __always_inline void emu_sce_window_grow(struct sock *sk, struct emu_sce_window *w,
						__u32 bytes, __u32 cwnd)
{
	if (bytes && !emu_in_slow_start(tcp_sk(sk)) && emu_is_cwnd_limited(sk)) {
		w->cnt += bytes;
		w->loss_cwnd = EMU_MAX(w->loss_cwnd, cwnd);
	}
}

/* Moves the window by the counter's whole segments (to at least 2, at most
 * the clamp), ages recent SCE by one ACK, and returns the window. */
static __always_inline __u32 emu_sce_window_step(struct sock *sk, struct emu_sce_window *w)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;
	__s64 steps = emu_window_steps(&w->cnt, (__u64)emu_sce_window_unit(sk, w) * cwnd);

	if (steps < 0) {
		__u32 n = (__u32)(-steps);

		cwnd = cwnd > n + 2 ? cwnd - n : 2;
	} else if (steps > 0) {
		__u64 grown = (__u64)cwnd + (__u64)steps;

		cwnd = grown < tp->snd_cwnd_clamp ? (__u32)grown : EMU_MAX(cwnd, tp->snd_cwnd_clamp);
	}
	if (cwnd != tp->snd_cwnd)
		tp->snd_cwnd = cwnd;
	if (w->recent_sce)
		w->recent_sce--;
	return cwnd;
}

/* In slow start the kernel grows the window; what is left past ssthresh
 * goes into the counter. After slow start the ACK handler moves it. */
static __always_inline void emu_sce_window_slow_start(struct sock *sk, struct emu_sce_window *w,
						      __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk) || !emu_in_slow_start(tp))
		return;
	acked = tcp_slow_start(tp, acked);
	w->cnt += (__s64)acked * emu_sce_window_unit(sk, w);
}
