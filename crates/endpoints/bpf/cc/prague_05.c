// SPDX-License-Identifier: MIT OR GPL-2.0
/* "prague version=2020-04": TCP Prague 0.5, the reference module as
 * L4STeam/linux had it at commit e741f5ac (2020-04-08), the kernel the
 * SCE-L4S bakeoff ran. Included by cc/prague.c after the pieces both
 * versions share (settings, RTT scaling, classic-ECN detection); prague.c's
 * callbacks hand a flow of this version to the functions here, and update
 * alpha as both versions do.
 * Its arithmetic is in arith/prague_05.h.
 *
 * What differs from the later version: the kernel's integer window moves
 * a segment at a time against a signed carry (cwnd_cnt); ssthresh() never
 * lowers ssthresh, so slow start runs on through a loss or a mark, and the
 * window is reduced only outside it; no loss state of its own (the window
 * grows through recovery); pacing on max(cwnd, packets in flight); growth
 * also while pacing, not the window, holds queued data back. */

/* The kernel's tcp_packets_in_flight(). */
static __always_inline __u32 emu_prague05_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline void emu_prague05_pacing(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mtu = emu_mss_to_mtu(sk, tp->mss_cache);
	__u64 rate = emu_prague05_pacing_rate(mtu, tp->snd_cwnd, emu_prague05_in_flight(tp),
					      tp->snd_ssthresh, tp->srtt_us);

	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	ca->max_tso_burst = emu_prague_max_tso_burst(rate, mtu, ca->burst_shift, 0);
	sk->sk_pacing_rate = rate;
}

static __always_inline __u32 emu_prague05_may_grow_now(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	return emu_prague05_may_grow(emu_is_cwnd_limited(sk),
				     sk->sk_pacing_status == SK_PACING_NEEDED,
				     tp->write_seq != tp->snd_nxt);
}

/* One ACK. The reference takes CE-marked segments off on an ACK with ECE;
 * a 6.18 rate sample has no is_ece, so a rise in delivered_ce (which moves
 * only on such ACKs) stands for it. */
static __always_inline void emu_prague05_update_cwnd(struct sock *sk, struct emu_prague_ca *ca,
						     const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_prague05_window w;
	__s64 acked = rs->acked_sacked;
	__u32 ce = tp->delivered_ce - ca->last_delivered_ce;
	__u32 changed;

	if (ce) {
		ca->saw_ce = 1;
		acked -= ce;
		ca->last_delivered_ce = tp->delivered_ce;
	}
	w.cnt = ca->cwnd_cnt;
	w.cwnd = tp->snd_cwnd;
	w.ssthresh = tp->snd_ssthresh;
	w.clamp = tp->snd_cwnd_clamp;
	w.pad = 0;
	changed = emu_prague05_on_ack(&w, acked, emu_prague05_may_grow_now(sk), ca->ai_increase);
	ca->cwnd_cnt = w.cnt;
	if (w.cwnd != tp->snd_cwnd)
		tp->snd_cwnd = w.cwnd;
	if (w.ssthresh != tp->snd_ssthresh)
		tp->snd_ssthresh = w.ssthresh;
	if (changed)
		emu_prague_changed(sk, ca);
}

static __always_inline void emu_prague05_enter_loss(struct sock *sk, struct emu_prague_ca *ca)
{
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;

	ca->loss_cwnd = cwnd;
	ca->loss_cwnd_cnt = ca->cwnd_cnt;
	ca->cwnd_cnt = emu_prague05_loss_cnt(ca->cwnd_cnt, cwnd);
	emu_prague_changed(sk, ca);
}

/* The CE reduction is owed in the carry, from the integer window. */
static __always_inline void emu_prague05_enter_cwr(struct sock *sk, struct emu_prague_ca *ca)
{
	__u64 alpha;

	if (emu_prague_cwr_alpha(sk, ca, &alpha))
		ca->cwnd_cnt = emu_prague05_cwr_cnt(ca->cwnd_cnt, tcp_sk(sk)->snd_cwnd, alpha);
}

static __always_inline void emu_prague05_set_state(struct sock *sk, struct emu_prague_ca *ca,
						   __u8 new_state)
{
	if (new_state == TCP_CA_Recovery)
		emu_prague05_enter_loss(sk, ca);
	else if (new_state == TCP_CA_CWR)
		emu_prague05_enter_cwr(sk, ca);
}

/* ssthresh(): max(cwnd, ssthresh), and detection's gains follow it. */
static __always_inline __u32 emu_prague05_ssthresh(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ssthresh = emu_prague05_threshold(tp->snd_cwnd, tp->snd_ssthresh);
	struct emu_prague_classic *c = emu_prague_classic_of(sk, ca);

	if (c)
		emu_prague_classic_gains(c, ssthresh);
	return ssthresh;
}

static __always_inline __u32 emu_prague05_undo(struct sock *sk, struct emu_prague_ca *ca)
{
	ca->cwnd_cnt = emu_prague05_undo_cnt(ca->cwnd_cnt, ca->loss_cwnd_cnt);
	return EMU_MAX(ca->loss_cwnd, tcp_sk(sk)->snd_cwnd);
}
