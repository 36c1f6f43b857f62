// In-page navigation: links that change the URL without reloading (the server answers every UI path with
// index.html, so a reload or a shared link opens the same page).
import type { ComponentChildren } from 'preact';

let navigateTo: (path: string) => void = (p) => { location.href = p; };

export function setNavigator(fn: (path: string) => void): void {
  navigateTo = fn;
}

export function go(path: string): void {
  navigateTo(path);
}

export function Link({ href, children, class: cls, title }: { href: string; children: ComponentChildren; class?: string; title?: string }) {
  return (
    <a href={href} class={cls} title={title} onClick={(e) => {
      if (e.button === 0 && !e.ctrlKey && !e.metaKey && !e.shiftKey) {
        e.preventDefault();
        navigateTo(href);
      }
    }}>{children}</a>
  );
}
