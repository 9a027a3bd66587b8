DROP TABLE tier_bands;
