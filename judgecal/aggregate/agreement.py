"""Inter-annotator agreement (re-exported from :mod:`judgecal.stats.agreement`, where the audit reads it too)."""

from judgecal.stats.agreement import (
    count_matrix,
    fleiss_kappa,
    fleiss_kappa_from_sums,
    krippendorff_alpha,
    krippendorff_alpha_from_sums,
    pairwise_cohen,
)

__all__ = ["count_matrix", "fleiss_kappa", "fleiss_kappa_from_sums", "krippendorff_alpha",
           "krippendorff_alpha_from_sums", "pairwise_cohen"]
