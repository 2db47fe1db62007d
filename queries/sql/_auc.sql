-- ROC-AUC from the positives' rank sum (Mann-Whitney, average ranks for ties), over columns
-- n_pos, n_neg, rank_sum_pos; NULL (undefined, never 0.5) without positives or negatives.
CASE WHEN n_pos > 0 AND n_neg > 0
            THEN (rank_sum_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
       END AS auc
