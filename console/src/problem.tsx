/** The message of a refusal or failure, announced to screen readers (`role="alert"`); nothing when there is none. */
export function Problem({ text }: { text: string | undefined }) {
  return text ? (
    <p role="alert" class="error">
      {text}
    </p>
  ) : null;
}
