/* Socket marks shared by the congestion controls and the TC helpers.
 *
 * A congestion control ORs its bit into the socket's mark in .init; the
 * kernel copies the socket mark into every packet the socket sends, so the
 * TC egress program sees it in skb->mark. */
#ifndef EMU_MARKS_H
#define EMU_MARKS_H

/* Data packets of this socket leave as ECT(1) instead of ECT(0) (L4S). */
#define EMU_MARK_ECT1 0x40000000
/* ACKs of this socket carry the SCE echo (ESCE, TCP header bit 0x0100). */
#define EMU_MARK_ESCE 0x20000000

#endif
